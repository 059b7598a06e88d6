"""Ladder plans: which bots meet, in which seats, in which duplicate groups.

A plan is a pure function of its parameters, so a resumed or re-run ladder plays the same
matches, whatever the parallelism. It holds no deal seeds: a group's decks come from the
run's secret deal key (``arena._deal.match_seed(key, group)``), so a plan is no secret.

- **Tables**: every combination of ``table_size`` bots when the match budget covers them all
  (repeated with fresh seeds while budget remains), otherwise a balanced selection in which
  every bot appears as evenly as possible.
- **Duplicate deals** (default): each table's group plays one deal seed ``table_size`` times
  with the seats rotated, so every bot sits in every seat with the same cards; the number of
  matches is rounded up to whole rotations. Without duplicate deals every match is a group
  of its own, with a shuffled seat order.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from arena._errors import PlanError

__all__ = ["PlannedMatch", "plan_ladder"]


@dataclass(frozen=True, slots=True)
class PlannedMatch:
    """One match of a ladder.

    Attributes:
        index: 0-based position in the plan.
        match_id: stable id (``m00000``), used for files and rating order.
        group: matches sharing a deal seed (duplicate deals) share a group.
        bots: the bot name in each seat.
    """

    index: int
    match_id: str
    group: int
    bots: tuple[str, ...]


def _tables(bots: Sequence[str], k: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
    """``count`` tables of ``k`` bots: all combinations in turn if affordable, else balanced."""
    combos = list(itertools.combinations(bots, k))
    if count >= len(combos):
        return [combos[i % len(combos)] for i in range(count)]
    appearances = dict.fromkeys(bots, 0)
    pairs: dict[tuple[str, str], int] = {}
    out = []
    for _ in range(count):
        # Least-used bots first; among equals, those that met least; ties broken by the rng.
        order = sorted(bots, key=lambda b: (appearances[b], rng.random()))
        table = [order[0]]
        for _ in range(k - 1):
            rest = [b for b in order if b not in table]
            table.append(
                min(
                    rest,
                    key=lambda b: (
                        appearances[b],
                        sum(pairs.get((min(b, t), max(b, t)), 0) for t in table),
                    ),
                )
            )
        for b in table:
            appearances[b] += 1
        for a, b in itertools.combinations(sorted(table), 2):
            pairs[(a, b)] = pairs.get((a, b), 0) + 1
        out.append(tuple(sorted(table, key=bots.index)))
    return out


def plan_ladder(
    bots: Sequence[str], *, matches: int, table_size: int, seed: int, duplicate: bool = True
) -> list[PlannedMatch]:
    """Plan a round-robin ladder (see the module docstring).

    Raises:
        PlanError: fewer than 3 bots, a table size outside 3..5 or above the number of bots,
            duplicate names, or fewer than one match.
    """
    if len(set(bots)) != len(bots):
        raise PlanError(f"each bot may appear once in a ladder: {', '.join(bots)}")
    if not 3 <= table_size <= 5:
        raise PlanError(f"--table-size must be 3 to 5 (R-PLAYERS), got {table_size}")
    if len(bots) < table_size:
        raise PlanError(
            f"a table of {table_size} needs at least {table_size} bots, got {len(bots)}"
        )
    if matches < 1:
        raise PlanError(f"--matches must be at least 1, got {matches}")
    rng = random.Random(f"arena:{seed}:tables")
    out: list[PlannedMatch] = []
    if duplicate:
        groups = math.ceil(matches / table_size)
        for g, table in enumerate(_tables(bots, table_size, groups, rng)):
            for r in range(table_size):
                seats = tuple(table[(i + r) % table_size] for i in range(table_size))
                i = len(out)
                out.append(PlannedMatch(i, f"m{i:05d}", g, seats))
    else:
        for g, table in enumerate(_tables(bots, table_size, matches, rng)):
            order = list(table)
            rng.shuffle(order)  # plain deals: a random seat order per match
            out.append(PlannedMatch(g, f"m{g:05d}", g, tuple(order)))
    return out
