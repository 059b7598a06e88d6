"""Ladder plans: which bots meet, in which seats, in which duplicate groups.

A plan is a pure function of its parameters, so a resumed or re-run ladder plays the same
matches, whatever the parallelism. It holds no deal seeds: a group's decks come from the
run's secret deal key (``arena.match._deal.match_seed(key, group)``), so a plan is no secret.

- **Tables**: every combination of ``table_size`` bots when the match budget covers them all
  (repeated with fresh seeds while budget remains; what is left over after the last whole
  round is a balanced selection), otherwise a balanced selection: every bot sits at a number
  of tables within one of every other bot's, at any point of the plan, and each table is
  chosen so that its bots have met as little as possible. Planning takes time and memory in
  proportion to the tables planned, never to the number of possible tables.
- **Duplicate deals** (default): each table's group plays one deal seed ``table_size`` times
  with the seats rotated, so every bot sits in every seat with the same cards; the number of
  matches is rounded up to whole rotations. Without duplicate deals every match is a group
  of its own, with a shuffled seat order.
- **Both seat orders**: rotations keep a group's cyclic order, so who sits right after whom
  (and takes their discards, R-DRAW) is fixed for the group. It is worth places: two copies
  of a bot, one seated right before the other, differ by 0.030 places a match
  (docs/standings.md). Each group's seating is its table's listed order or that order
  reversed, whichever evens out the times each bot has sat right before each other
  (``_oriented``): a ladder of three bots at tables of 3 plays its one table each way in turn.

- **Owners apart** (optional): given each bot's owner, no table seats two bots of one owner
  (the league's rule: two bots of one author could pass each other hidden cards through their
  timing, docs/security.md). Tables are then chosen among those the rule allows, with the
  same balance; a plan that cannot keep them apart is refused.

``plan_spread`` measures how even a plan is: matches per bot, and tables shared per pair.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from arena._errors import PlanError
from arena.executors import PlannedMatch

__all__ = ["PlanSpread", "PlannedMatch", "plan_ladder", "plan_spread"]

# At most this many bots are scored for a seat. In a large ladder the first one drawn has
# nearly always met no one at the table, so the search stops at once; the cap bounds the work
# where meetings are dense. A level with this many bots or fewer left is searched in full.
_CANDIDATES = 32
# What a seat next to a bot of the same owner costs: more than any count of meetings.
_APART = 1 << 40
# Plans tried (each with its own random stream) before owners are declared impossible to keep
# apart: the balanced chooser is greedy, so a rare draw can corner it.
_ATTEMPTS = 20


@dataclass(frozen=True, slots=True)
class PlanSpread:
    """How evenly a plan shares out matches among bots and meetings among pairs of bots.

    A *meeting* is a table two bots share: a duplicate group counts once, however many
    rotations it plays. Every pair of bots could meet, so when the plan has fewer meetings
    than pairs, some pairs never meet and ``min_meetings`` is 0.

    Attributes:
        bots: bots in the ladder.
        min_matches: fewest matches any bot plays.
        max_matches: most matches any bot plays.
        pairs: pairs of bots, ``C(bots, 2)``.
        never_met: pairs that share no table.
        min_meetings: fewest tables any pair shares.
        max_meetings: most tables any pair shares.
    """

    bots: int
    min_matches: int
    max_matches: int
    pairs: int
    never_met: int
    min_meetings: int
    max_meetings: int

    def __str__(self) -> str:
        unmet = f", {self.never_met:,} of {self.pairs:,} pairs never met" if self.never_met else ""
        return (
            f"{self.min_matches}-{self.max_matches} matches per bot, "
            f"{self.min_meetings}-{self.max_meetings} tables per pair{unmet}"
        )


def plan_spread(plan: Iterable[PlannedMatch], bots: Iterable[str] = ()) -> PlanSpread:
    """Measure how evenly ``plan`` shares out matches and meetings.

    Args:
        plan: a plan from ``plan_ladder``.
        bots: the ladder's bots, so that a bot the plan never seats counts with 0 matches
            (a plan of fewer tables than bots); by default, the bots seated in the plan.
    """
    index: dict[str, int] = {b: i for i, b in enumerate(dict.fromkeys(bots))}
    matches: Counter[int] = Counter()
    meetings: Counter[int] = Counter()
    groups: set[int] = set()
    for p in plan:
        seats = sorted(index.setdefault(b, len(index)) for b in p.bots)
        matches.update(seats)
        if p.group not in groups:  # the rotations of a duplicate group are one meeting
            groups.add(p.group)
            meetings.update(a << 32 | b for a, b in itertools.combinations(seats, 2))
    n = len(index)
    pairs = math.comb(n, 2)
    never_met = pairs - len(meetings)
    return PlanSpread(
        bots=n,
        min_matches=min((matches[i] for i in range(n)), default=0),
        max_matches=max(matches.values(), default=0),
        pairs=pairs,
        never_met=never_met,
        min_meetings=0 if never_met else min(meetings.values(), default=0),
        max_meetings=max(meetings.values(), default=0),
    )


class _Balanced:
    """Chooses tables one at a time, each bot within one table of the others, pairs even.

    Bots are numbered. The bots that have sat at the fewest tables (``low``) and those with
    one table more (``high``) are the only two levels: a table takes its bots from ``low``,
    and when ``low`` has fewer than a table's worth, all of them sit with the rest taken from
    ``high``, which becomes the new ``low``. So every prefix of the plan is balanced.

    Each seat goes to the allowed bot that has met the bots already seated least often (pair
    counts live in a dict of the pairs that met, keyed ``a * n + b``), scoring at most
    ``_CANDIDATES`` bots drawn by the rng and stopping at the first that cannot be beaten:
    time and memory grow with the tables chosen, not with the bots or the possible tables.
    The last tables of a level have few bots to choose from, so they look ahead: from a
    ``low`` of at most ``_CANDIDATES`` the bots that have met the most others in it sit
    first, and the last ``k + 1`` to ``2k`` are split whichever way gives the fewest meetings
    to this table and the bots it leaves to sit together at the next.
    """

    def __init__(
        self, n: int, k: int, rng: random.Random, apart: frozenset[int] = frozenset()
    ) -> None:
        self.n, self.k, self.rng = n, k, rng
        self.apart = apart
        """Pair keys of bots that must not share a table (one owner's)."""
        self.low = list(range(n))
        rng.shuffle(self.low)
        self.high: list[int] = []
        self.met: dict[int, int] = {}
        # How many pairs have met exactly m times, and the least m over all pairs (``floor``):
        # no seat can cost less than the number of bots already seated times that.
        self.at_level: list[int] = [math.comb(n, 2)]
        self.floor = 0

    def table(self) -> list[int]:
        """The next table's bots, by number, and the bookkeeping of their meetings."""
        m, k = len(self.low), self.k
        if m < k:  # the rest of the lowest level sits, with the others from the next level
            forced = self.low
            self.low, self.high = self.high, []
            table = list(forced)
            while len(table) < k:
                table.append(self._pick(table))
            self.low.extend(forced)
            self.high.extend(table[len(forced) :])
        elif m <= 2 * k:
            table = self._split()
            self.high.extend(table)
        elif m <= _CANDIDATES:
            table = self._tail()
            self.high.extend(table)
        else:
            table = []
            while len(table) < k:
                table.append(self._pick(table))
            self.high.extend(table)
        self._meet(table)
        return table

    def _key(self, a: int, b: int) -> int:
        return a * self.n + b if a < b else b * self.n + a

    def _cost(self, bot: int, table: Sequence[int]) -> int:
        met, n = self.met, self.n
        cost = sum(met.get(bot * n + t if bot < t else t * n + bot, 0) for t in table)
        if self.apart:
            cost += _APART * sum(self._key(bot, t) in self.apart for t in table)
        return cost

    def _pick(self, table: Sequence[int]) -> int:
        """Take from ``low`` the bot that has met ``table`` least (among those scored)."""
        low, rng = self.low, self.rng
        size = len(low)
        if not table:
            best = rng.randrange(size)
        else:
            bound = len(table) * self.floor
            if size <= _CANDIDATES:
                start = rng.randrange(size)
                order: Iterable[int] = ((start + i) % size for i in range(size))
            else:
                order = (rng.randrange(size) for _ in range(_CANDIDATES))
            best, least = -1, math.inf
            for j in order:
                cost = self._cost(low[j], table)
                if cost < least:
                    best, least = j, cost
                    if cost <= bound:
                        break
            if least >= _APART:  # every bot scored shares an owner at the table: look at all
                for j in range(size):
                    cost = self._cost(low[j], table)
                    if cost < least:
                        best, least = j, cost
        bot = low[best]
        low[best] = low[-1]
        low.pop()
        return bot

    def _tail(self) -> list[int]:
        """Take a table from a small ``low``, hardest bots first.

        The bots that have met the most others in ``low`` sit first, so that those left for
        the last tables of the level can still be seated apart.
        """
        low, k, met, n = self.low, self.k, self.met, self.n
        hard = {a: sum(met.get(a * n + b if a < b else b * n + a, 0) for b in low) for a in low}
        start = self.rng.randrange(len(low))
        order = low[start:] + low[:start]
        table: list[int] = []
        while len(table) < k:
            bot = min(
                (b for b in order if b not in table),
                key=lambda b: (self._cost(b, table), -hard[b]),
            )
            table.append(bot)
        chosen = set(table)
        self.low = [b for b in low if b not in chosen]
        return table

    def _split(self) -> list[int]:
        """Take from ``low`` (``k`` to ``2k`` bots) the best table, looking one table ahead.

        The best table is the one that, with the bots it leaves to sit together next, has the
        fewest meetings; on a tie, the first in ``low``'s order.
        """
        low, k = self.low, self.k
        size = len(low)
        cost = [
            [
                self.met.get(self._key(a, b), 0) + _APART * (self._key(a, b) in self.apart)
                for b in low
            ]
            for a in low
        ]
        if size == k or not any(map(any, cost)):
            chosen: Sequence[int] = range(k)
        else:
            everyone = set(range(size))
            best, least = None, math.inf
            for combo in itertools.combinations(range(size), k):
                rest = sorted(everyone.difference(combo))
                total = sum(cost[a][b] for a, b in itertools.combinations(combo, 2)) + sum(
                    cost[a][b] for a, b in itertools.combinations(rest, 2)
                )
                if total < least:
                    best, least = combo, total
            assert best is not None
            chosen = best
        table = [low[i] for i in chosen]
        taken = set(chosen)
        self.low = [b for i, b in enumerate(low) if i not in taken]
        return table

    def _meet(self, table: Sequence[int]) -> None:
        met, at_level = self.met, self.at_level
        for a, b in itertools.combinations(table, 2):
            key = self._key(a, b)
            was = met.get(key, 0)
            met[key] = was + 1
            at_level[was] -= 1
            if was + 1 == len(at_level):
                at_level.append(0)
            at_level[was + 1] += 1
        while not at_level[self.floor]:
            self.floor += 1


def _tables(
    bots: Sequence[str],
    k: int,
    count: int,
    rng: random.Random,
    seed: int,
    owners: Mapping[str, str],
) -> list[tuple[str, ...]]:
    """``count`` tables of ``k`` bots: all combinations in turn if affordable, else balanced.

    With ``owners``, only tables whose bots all have different owners (a retry draws from a
    stream of its own, made from ``seed``).
    """
    if not owners:
        return _chosen(bots, k, count, rng, frozenset())
    owner = [owners.get(b, f"\0{b}") for b in bots]  # a bot with no owner is its own
    n = len(bots)
    apart = frozenset(
        a * n + b for a, b in itertools.combinations(range(n), 2) if owner[a] == owner[b]
    )
    for attempt in range(_ATTEMPTS):
        if attempt:
            rng = random.Random(f"arena:{seed}:tables:{attempt}")
        out = _chosen(bots, k, count, rng, apart)
        index = {b: i for i, b in enumerate(bots)}
        if all(
            index[a] * n + index[b] not in apart
            for t in out
            for a, b in itertools.combinations(sorted(t, key=index.__getitem__), 2)
        ):
            return out
    raise PlanError(
        f"cannot keep each owner's bots at separate tables of {k} with this plan: "
        "add bots of other owners, or use smaller tables"
    )


def _chosen(
    bots: Sequence[str], k: int, count: int, rng: random.Random, apart: frozenset[int]
) -> list[tuple[str, ...]]:
    n = len(bots)
    allowed = (
        [
            t
            for t in itertools.combinations(range(n), k)
            if not any(a * n + b in apart for a, b in itertools.combinations(t, 2))
        ]
        if apart and math.comb(n, k) <= count
        else []
    )
    every = len(allowed) if apart else math.comb(n, k)
    out: list[tuple[str, ...]] = []
    if count >= every > 0:  # affordable: at most ``count`` combinations are built
        combos = allowed if apart else list(itertools.combinations(range(n), k))
        out = [tuple(bots[i] for i in t) for t in combos] * (count // every)
        count %= every
    if count:
        chooser = _Balanced(n, k, rng, apart)
        for _ in range(count):
            out.append(tuple(bots[i] for i in sorted(chooser.table())))
    return out


def _oriented(tables: Iterable[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Each table seated in its order or reversed, so that every two bots sit both ways.

    A duplicate group rotates one seating, so each bot has one bot right after it for the
    whole group. Reversing a seating reverses every such "x right before y". Each table in
    turn takes the way that leans against the counts so far (the sum over its neighbours of
    times x sat right before y, less times y sat right before x), its listed order on a tie.
    So the one table of a ladder of three bots at tables of 3 alternates. In the plans
    measured (``test_plan.py``) round-robins played again and again left no pair leaning
    either way, and in balanced selections no pair sat one way in more than 4 groups more
    than the other.
    Memory: a count per ordered pair that has sat side by side, at most ``k`` per table.
    """
    before: Counter[tuple[str, str]] = Counter()
    out: list[tuple[str, ...]] = []
    for table in tables:
        k = len(table)
        ahead = [(table[i], table[(i + 1) % k]) for i in range(k)]
        lean = sum(before[a, b] - before[b, a] for a, b in ahead)
        if lean <= 0:
            before.update(ahead)
            out.append(table)
        else:  # reversed, every "x right before y" becomes "y right before x"
            before.update((b, a) for a, b in ahead)
            out.append(table[::-1])
    return out


def plan_ladder(
    bots: Sequence[str],
    *,
    matches: int,
    table_size: int,
    seed: int,
    duplicate: bool = True,
    owners: Mapping[str, str] | None = None,
    both_orders: bool = True,
) -> list[PlannedMatch]:
    """Plan a round-robin ladder (see the module docstring).

    Args:
        bots: the bots' names.
        matches: how many matches (rounded up to whole rotations with duplicate deals).
        table_size: seats per table.
        seed: the plan's seed (not the deals': those come from the run's secret key).
        duplicate: play each table's deal in every seat rotation.
        owners: each bot's owner; when given, no table seats two bots of one owner (bots
            missing from it are owners of their own).
        both_orders: seat each duplicate group in its table's order or reversed, evening out
            who sits right before whom (``_oriented``); False: always in the table's order,
            as plans were made before 2026-12-08 (a run saved then resumes with its plan).

    Raises:
        PlanError: fewer than 3 bots, a table size outside 3..5 or above the number of bots,
            duplicate names, fewer than one match, or owners that cannot be kept apart
            (fewer owners than seats at a table).
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
    owners = {b: o for b, o in (owners or {}).items() if b in set(bots)}
    distinct = len({owners.get(b, f"\0{b}") for b in bots})
    if distinct < table_size:
        raise PlanError(
            f"a table of {table_size} with each owner's bots apart needs bots of at least "
            f"{table_size} owners, got {distinct}"
        )
    rng = random.Random(f"arena:{seed}:tables")
    out: list[PlannedMatch] = []
    if duplicate:
        groups = math.ceil(matches / table_size)
        tables = _tables(bots, table_size, groups, rng, seed, owners)
        for g, table in enumerate(_oriented(tables) if both_orders else tables):
            for r in range(table_size):
                seats = tuple(table[(i + r) % table_size] for i in range(table_size))
                i = len(out)
                out.append(PlannedMatch(i, f"m{i:05d}", g, seats))
    else:
        for g, table in enumerate(_tables(bots, table_size, matches, rng, seed, owners)):
            order = list(table)
            rng.shuffle(order)  # plain deals: a random seat order per match
            out.append(PlannedMatch(g, f"m{g:05d}", g, tuple(order)))
    return out
