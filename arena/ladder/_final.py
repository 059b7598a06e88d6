"""A final's stopping rule: play in rounds, stop once the top is told apart, spend alpha.

A league season ends with a **final**: a tournament over frozen entries, in duplicate groups
(one secret deal, every seat rotation) planned by ``plan_ladder``. Its budget of matches is
cut into ``looks`` rounds of whole groups (:func:`final_rounds`); after each round the
organiser looks at the luck-adjusted standings (:func:`final_look`) and stops early once
every adjacent pair of the top ``N`` is separated, each of those entries in a band of its
own (ranks 1 to ``N``); otherwise the next round is played, until the budget is spent.

**Spending alpha.** Looking after every round at 95 % and stopping at the first look that
separates would inflate the false separations: two equal entries get ``looks`` chances to
look different. So each look uses the level ``1 - alpha / looks`` (Bonferroni). For one pair
of entries equal in distribution and their direct paired test (``_standings._paired_ranks``:
the interval of their paired, per-set difference excludes 0), the chance that **some** look
rejects is at most the sum over the looks of each look's chance, ``looks * alpha / looks =
alpha``, whatever the dependence between the looks (the union bound) and whenever the final
stops. That is the guarantee meant: two copies of one bot end in different bands in no more
than ``alpha`` of finals.

**Its limits.** The argument covers one direct test; the bands are not one test. A band is
formed by a chain (a row joins the band above unless told apart from every row of it), so two
copies with a third entry between them can end apart with no direct test between them ever
rejecting; with fewer than ``MIN_SAMPLES`` shared sets the bands compare the two entries' own
intervals instead; and Student's t on set means of discrete places is an approximation. So
the guarantee is checked by simulation, not proven
(``tests/arena/ladder/test_final.py::test_two_copies_end_apart_in_at_most_alpha_of_finals``):
synthetic finals of two copies of one bot (second and third by strength) among four others
well apart, 6 entries at tables of 4, top 4, 10 looks over 60 groups (240 matches), each
seat's performance its strength plus its deal's seat luck plus noise. Over 500 finals each
way the copies ended in different bands in **0.6 %** of finals with the rule at ``alpha``
0.05 (every look at 99.5 %), against **13.4 %** when every look was at plain 95 %: the
inflation the spending prevents.
The price is matches: ``benchmarks/final.py`` measures what stopping early saves
(docs/standings.md, "The final's stopping rule").
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from arena._errors import PlanError
from arena.executors import PlannedMatch
from arena.ladder._plan import _ATTEMPTS, _Balanced, _oriented, plan_ladder
from arena.ladder._standings import BotStanding, MatchOutcome, compute_standings

_T = TypeVar("_T")

__all__ = ["FinalLook", "FinalRule", "final_look", "final_rounds"]


@dataclass(frozen=True, slots=True)
class FinalRule:
    """When a final stops: its budget, the top to separate, the error it may make, its looks.

    Attributes:
        budget: the most matches the final plays (rounded up to whole duplicate groups).
        top: adjacent pairs among the top ``top`` entries to separate (capped at the number
            of entries).
        alpha: the chance that two equal entries end in different bands.
        looks: the budget is played in this many rounds, one look after each.
    """

    budget: int
    top: int = 4
    alpha: float = 0.05
    looks: int = 10

    @property
    def confidence(self) -> float:
        """The level of every look's intervals: ``1 - alpha / looks`` (alpha spent evenly)."""
        return 1 - self.alpha / self.looks

    def check(self, entries: int, table_size: int) -> None:
        """Refuse a rule that cannot be played with ``entries`` at tables of ``table_size``.

        Raises:
            PlanError: a budget below 1, a top below 2, an alpha outside (0, 0.5), fewer
                than one look, fewer than 3 entries or fewer than a table's seats, or a
                budget too small to give every look a round of at least one group.
        """
        if self.budget < 1:
            raise PlanError(f"a final's budget must be at least 1 match, got {self.budget}")
        if self.top < 2:
            raise PlanError(
                f"a final separates a top of at least 2 entries (one pair), got {self.top}"
            )
        if not 0 < self.alpha < 0.5:
            raise PlanError(f"a final's alpha must be above 0 and below 0.5, got {self.alpha}")
        if self.looks < 1:
            raise PlanError(f"a final takes at least 1 look, got {self.looks}")
        if entries < 3:
            raise PlanError(f"a final needs at least 3 entries, got {entries}")
        if entries < table_size:
            raise PlanError(
                f"a final at tables of {table_size} needs at least {table_size} entries, "
                f"got {entries}"
            )
        groups = -(-self.budget // table_size)
        if groups < self.looks:
            raise PlanError(
                f"a budget of {self.budget} matches is {groups} groups of {table_size}, too "
                f"few for {self.looks} rounds of at least one group: raise the budget to "
                f"{self.looks * table_size} or take fewer looks"
            )


@dataclass(frozen=True, slots=True)
class FinalLook:
    """The standings after a round of a final, and whether the final may stop.

    Attributes:
        rows: the standings at the rule's level (``compute_standings(outcomes,
            confidence=rule.confidence)``), best first.
        separated: every adjacent pair of the top ``min(top, len(rows))`` rows is in bands
            of their own (their ranks are 1, 2, ... all distinct) and the row below the top
            is in a band below them all (it does not share the last place of the top);
            False with fewer than two rows, when there is nothing to tell apart yet.
    """

    rows: list[BotStanding]
    separated: bool


def final_look(outcomes: Sequence[MatchOutcome], rule: FinalRule) -> FinalLook:
    """Look at a final's standings after a round: the rows, and whether its top is apart.

    Args:
        outcomes: the final's finished matches so far (any order).
        rule: the final's rule; its :attr:`FinalRule.confidence` sets every interval.
    """
    return _look(compute_standings(outcomes, confidence=rule.confidence), rule.top)


def _look(rows: list[BotStanding], top: int) -> FinalLook:
    """The look at ``rows`` (standings at the rule's level): is the top ``top`` apart?"""
    n = min(top, len(rows))
    separated = (
        n >= 2
        and [r.rank for r in rows[:n]] == list(range(1, n + 1))
        # the N-th place is its own: no row below shares its band (ranks 1, 2, 3, 3 do not
        # tell who is third)
        and (len(rows) == n or (rows[n].rank or n + 1) > n)
    )
    return FinalLook(rows, separated)


def final_rounds(
    entries: Sequence[str],
    rule: FinalRule,
    *,
    table_size: int,
    seed: int,
    owners: Mapping[str, str] | None = None,
) -> list[list[PlannedMatch]]:
    """The final's plan cut into ``rule.looks`` rounds of whole duplicate groups.

    The plan is ``plan_ladder(entries, matches=rule.budget, table_size=table_size,
    seed=seed, duplicate=True, owners=owners)``; the rounds are consecutive and as equal as
    possible (their groups differ by one at most, the first rounds the larger). After every
    round each entry has played within one group (``table_size`` matches) of every other.

    ``plan_ladder`` keeps that balance at any point of a plan it chooses, but a budget that
    covers every possible table gets them all, listed in lexicographic order: the first entry
    sits at all the first tables, and no order of them all keeps the balance in general. Such
    a plan is replaced by one of as many groups from ``plan_ladder``'s balanced chooser (the
    tables it would choose for a smaller budget, continued; owners kept apart likewise), its
    groups seated in both orders as ``plan_ladder`` seats them (``_plan._oriented``).

    A pure function: the same arguments give the same rounds.

    Raises:
        PlanError: a rule that ``FinalRule.check`` refuses, or a plan that ``plan_ladder``
            refuses (a table size outside 3 to 5, duplicate names, owners that cannot be
            kept apart).
    """
    rule.check(len(entries), table_size)
    plan = plan_ladder(
        entries,
        matches=rule.budget,
        table_size=table_size,
        seed=seed,
        duplicate=True,
        owners=owners,
    )
    tables = [m.bots for m in plan if m.index % table_size == 0]  # each group's first seating
    if not _balanced(tables, entries):
        plan = _rotations(
            _oriented(_chosen_tables(entries, table_size, len(tables), seed, owners or {}))
        )
    groups = [plan[i : i + table_size] for i in range(0, len(plan), table_size)]
    return [[m for g in r for m in g] for r in near_equal_rounds(groups, rule.looks)]


def near_equal_rounds(items: Sequence[_T], looks: int) -> list[list[_T]]:
    """``items`` cut into ``looks`` consecutive rounds, the first rounds the longer.

    Their lengths differ by one at most: how ``final_rounds`` cuts a plan's duplicate groups.
    """
    size, extra = divmod(len(items), looks)
    rounds: list[list[_T]] = []
    start = 0
    for r in range(looks):
        end = start + size + (r < extra)
        rounds.append(list(items[start:end]))
        start = end
    return rounds


def _balanced(tables: Sequence[Sequence[str]], entries: Sequence[str]) -> bool:
    """Whether every entry sits at a number of ``tables`` within one of every other's, always."""
    played: Counter[str] = Counter(dict.fromkeys(entries, 0))
    for table in tables:
        played.update(table)
        if max(played.values()) - min(played.values()) > 1:
            return False
    return True


def _chosen_tables(
    entries: Sequence[str], k: int, count: int, seed: int, owners: Mapping[str, str]
) -> list[tuple[str, ...]]:
    """``count`` tables from ``plan_ladder``'s balanced chooser, each owner's entries apart.

    As ``_plan._tables`` does below a full round-robin: the chooser seeded as there, and
    with owners a fresh stream per attempt until no table seats two entries of one owner.
    """
    n = len(entries)
    owner = [owners.get(e, f"\0{e}") for e in entries]  # an entry with no owner is its own
    apart = frozenset(
        a * n + b for a, b in itertools.combinations(range(n), 2) if owner[a] == owner[b]
    )
    for attempt in range(_ATTEMPTS):
        name = f"arena:{seed}:tables:{attempt}" if attempt else f"arena:{seed}:tables"
        chooser = _Balanced(n, k, random.Random(name), apart)
        picked = [sorted(chooser.table()) for _ in range(count)]
        if not any(a * n + b in apart for t in picked for a, b in itertools.combinations(t, 2)):
            return [tuple(entries[i] for i in t) for t in picked]
    raise PlanError(
        f"cannot keep each owner's entries at separate tables of {k} in this final: "
        "add entries of other owners, or use smaller tables"
    )


def _rotations(tables: Sequence[tuple[str, ...]]) -> list[PlannedMatch]:
    """Each table's group: every seat rotation, numbered as ``plan_ladder`` numbers them."""
    out: list[PlannedMatch] = []
    for g, table in enumerate(tables):
        k = len(table)
        for r in range(k):
            i = len(out)
            out.append(PlannedMatch(i, f"m{i:05d}", g, tuple(table[(j + r) % k] for j in range(k))))
    return out
