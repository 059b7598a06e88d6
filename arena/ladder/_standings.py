"""Standings by bankroll survival, across the matches of a ladder.

Per bot, over the matches it played (see docs/arena.md for the definitions):

- **score**: placement points scaled to the table, ``(K - place) / (K - 1)``: 1 for first,
  0 for last, whatever the table size ``K``; its mean with a 95 % confidence interval
  (Student's t, ``mean +/- t(n - 1) * sd / sqrt(n)``) clipped to the possible range [0, 1];
  with fewer than :data:`MIN_SAMPLES` matches the interval is the whole range;
- **mean place** (1 is best) with a 95 % interval computed with the **duplicate set** as the
  unit (the matches of one deal group, all seat rotations: a bot's places within one set are
  not independent), and the **luck-adjusted place** (``arena.match._luck``, docs/standings.md):
  each match's place less the part of it the cards explain, with its interval by the same
  unit; None where the records carry no luck estimate. Both intervals are Student's t with
  ``sets - 1`` degrees of freedom, and there is none (None) below :data:`MIN_SAMPLES` sets:
  a spread estimated from two to four set means is mostly noise (docs/standings.md);
- **first places** (matches placed first, and their share);
- **mean final chips** and **chips per hand** (net chips over all its matches divided by the
  hands those matches lasted);
- a **rating** from openskill's Plackett-Luce model fed every match's placements in match
  order, shown as ``mu`` with the 95 % interval ``mu +/- 1.96 sigma``;
- **rank and tied bands, by luck-adjusted place** when every match added has a luck
  estimate: rows are sorted by adjusted place (then mean place, then name); going down the
  table, a row joins the band above it unless it is told apart from **every** row of that
  band by their **paired** difference: over the duplicate sets both played (at least
  :data:`MIN_SAMPLES`), its 95 % interval excludes 0 (``_paired_ranks``);
- otherwise, **rank and tied bands by score**: rows are sorted by the key (higher score,
  then lower mean place, then name), computed exactly (fractions), so equal results are
  never ordered by rounding noise. Going down the table, a row whose score interval
  overlaps the interval of its band's first row (the leader: ``high >= leader's low``)
  joins that band; otherwise it leads a new one.

Every interval above but the rating's (and so every band) is at 95 % by default; ``confidence``
(``compute_standings(..., confidence=0.995)``) sets another level, for a final that looks at
its standings several times and spends its error over the looks (``arena.ladder._final``).

Either way a band's rank is its leader's position (1, 1, 3: competition ranking), and
``tied`` marks the rows of a band of two or more. So ranks never decrease down the table,
every band is a run of consecutive rows, and equal ranks are exactly the tied rows.

Bots that **did not start** (``compute_standings(..., did_not_start={bot: reason})``) are
listed after the ranked rows, by name, with ``rank`` None, status ``did not start`` and the
reason; their numbers are None. A match one of them is seated in counts for nobody: it is
left out of every score and rating.
"""

from __future__ import annotations

import csv
import functools
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist
from types import MappingProxyType
from typing import Any

from openskill.models import PlackettLuce, PlackettLuceRating

from arena._text import clean

__all__ = [
    "MIN_SAMPLES",
    "BotStanding",
    "MatchOutcome",
    "StandingStatus",
    "StandingsBuilder",
    "compute_standings",
    "paired_difference",
    "t95",
    "t_quantile",
    "write_standings",
]

_Z95 = 1.959964
MIN_SAMPLES = 5
"""The fewest samples (duplicate sets; matches where a match is the unit) that get a 95 %
interval or decide a band: below it an interval is not shown, and two bots are not told
apart. With ``n`` samples an interval is Student's t with ``n - 1`` degrees of freedom."""
_NOBODY: Mapping[str, str] = MappingProxyType({})
# Characters that make a spreadsheet read a CSV cell as a formula (OWASP, "CSV injection").
_FORMULA_START = ("=", "+", "-", "@")


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """The part of a match the standings need.

    Attributes:
        match_id: orders the rating updates.
        bots: the bot in each seat.
        placements: each seat's place (1 is best).
        bankrolls: each seat's final chips.
        start_bankroll: each seat's starting chips.
        hands: hands the match lasted.
        group: its duplicate set (deal group); None: a set of its own.
        luck: per seat, the places its luck was worth (``arena.match._luck``); None if unknown.
    """

    match_id: str
    bots: tuple[str, ...]
    placements: tuple[int, ...]
    bankrolls: tuple[int, ...]
    start_bankroll: int
    hands: int
    group: int | None = None
    luck: tuple[float, ...] | None = None


class StandingStatus(StrEnum):
    """Why a bot has the row it has."""

    RANKED = "ranked"
    """It played matches that count: every number is set and it has a rank."""
    DID_NOT_START = "did not start"
    """It never started: no rank, no numbers, a reason; its matches count for nobody."""


@dataclass(frozen=True, slots=True)
class BotStanding:
    """One row of the standings table (also one object of standings.json, one CSV line).

    Attributes:
        rank: the rank of its band (1 is best); None for a bot that did not start.
        tied: its band has two or more rows (printed ``2=``).
        bot: the bot's name.
        status: ranked, or did not start.
        matches: matches it played that count.
        score: mean of ``(K - place) / (K - 1)``, in [0, 1].
        score_low: low end of the score's 95 % interval, in [0, 1].
        score_high: high end of the score's 95 % interval, in [0, 1].
        mean_place: mean place, 1 is best.
        place_low: low end of the mean place's 95 % interval, by duplicate set.
        place_high: high end of that interval.
        adjusted_place: mean luck-adjusted place (lower is better); None without luck data.
        adjusted_low: low end of its 95 % interval, by duplicate set.
        adjusted_high: high end of that interval.
        sets: duplicate sets it played in (the unit of both place intervals).
        first_places: matches it placed first in (sharing first place counts).
        first_rate: ``first_places / matches``.
        mean_chips: mean final bankroll.
        chips_per_hand: net chips over all its matches per hand those matches lasted.
        rating: the openskill Plackett-Luce ``mu``.
        rating_low: ``mu - 1.96 sigma``.
        rating_high: ``mu + 1.96 sigma``.
        reason: why it did not start; empty for a ranked bot.

    The numbers that need a match (``score`` to ``rating_high``, ``first_places`` aside)
    are None for a bot that did not start.
    """

    rank: int | None
    tied: bool
    bot: str
    status: StandingStatus
    matches: int
    score: float | None
    score_low: float | None
    score_high: float | None
    mean_place: float | None
    place_low: float | None
    place_high: float | None
    adjusted_place: float | None
    adjusted_low: float | None
    adjusted_high: float | None
    sets: int
    first_places: int
    first_rate: float | None
    mean_chips: float | None
    chips_per_hand: float | None
    rating: float | None
    rating_low: float | None
    rating_high: float | None
    reason: str


def _not_started(bot: str, reason: str) -> BotStanding:
    return BotStanding(
        rank=None,
        tied=False,
        bot=bot,
        status=StandingStatus.DID_NOT_START,
        matches=0,
        score=None,
        score_low=None,
        score_high=None,
        mean_place=None,
        place_low=None,
        place_high=None,
        adjusted_place=None,
        adjusted_low=None,
        adjusted_high=None,
        sets=0,
        first_places=0,
        first_rate=None,
        mean_chips=None,
        chips_per_hand=None,
        rating=None,
        rating_low=None,
        rating_high=None,
        reason=reason,
    )


def compute_standings(
    outcomes: Sequence[MatchOutcome],
    did_not_start: Mapping[str, str] = _NOBODY,
    *,
    confidence: float = 0.95,
) -> list[BotStanding]:
    """The standings table, best first, from finished matches (any order: sorted here).

    Args:
        outcomes: the matches that count.
        did_not_start: bots that never started, each with the reason. They are listed
            last, by name, never ranked; a match that seats one of them is left out.
        confidence: the level of every interval (score, place, adjusted place, paired
            differences) and so of the bands; the rating's interval stays 95 %. A final
            that looks at its standings several times spends its error over the looks with a
            higher level (``arena.ladder._final``).

    Raises:
        ValueError: ``confidence`` is not strictly between 0 and 1.
    """
    builder = StandingsBuilder()
    for o in sorted(outcomes, key=lambda o: o.match_id):
        if not did_not_start.keys() & set(o.bots):
            builder.add(o)
    return builder.rows(did_not_start, confidence=confidence)


def _band_ranks(intervals: Sequence[tuple[float, float]]) -> list[int]:
    """The rank of each row, given the (low, high) score intervals in sort-key order.

    A row whose interval reaches the band leader's (``high >= leader's low``) joins the
    band; otherwise it leads a new band, ranked by its position (see the module docstring).
    """
    ranks: list[int] = []
    leader_low = 0.0
    for i, (low, high) in enumerate(intervals):
        if i == 0 or high < leader_low:
            ranks.append(i + 1)
            leader_low = low
        else:
            ranks.append(ranks[-1])
    return ranks


def _paired_ranks(
    rows: Sequence[BotStanding],
    pairs: Mapping[tuple[str, str], Sequence[float]],
    confidence: float = 0.95,
) -> list[int]:
    """The rank of each row, given rows sorted by luck-adjusted place (best first).

    A row joins the band above it when it cannot be told apart from some row of that band
    (not only its first: comparing with the first alone split two copies of one bot in 16
    to 20 % of simulated ladders, as A joined B's band and A2 did not) by their **paired**
    difference: over the duplicate sets both played, the mean of (one's set mean - the
    other's), adjusted places, has a 95 % interval (``confidence``) that reaches 0
    (:func:`paired_difference`). With fewer than :data:`MIN_SAMPLES` shared sets
    the two bots' own intervals (at the same level, as ``rows`` holds them) are compared
    instead (the difference of their means against the root of the sum of their squared
    half-widths); a bot without an interval (fewer sets
    than that) cannot be told apart from anyone.
    """
    ranks: list[int] = []
    band: list[BotStanding] = []
    for i, row in enumerate(rows):
        # The nearest members first: in a wide band one of them usually ties, at once.
        if all(_separated(member, row, pairs, confidence) for member in reversed(band)):
            ranks.append(i + 1)
            band = [row]
        else:
            ranks.append(ranks[-1])
            band.append(row)
    return ranks


def _separated(
    above: BotStanding,
    row: BotStanding,
    pairs: Mapping[tuple[str, str], Sequence[float]],
    confidence: float = 0.95,
) -> bool:
    """True if ``above`` (sorted above ``row``) and ``row`` are told apart at ``confidence``.

    See :func:`_paired_ranks`.
    """
    paired = paired_difference(pairs, above.bot, row.bot, confidence=confidence)
    if paired is not None:
        _, _, low, high = paired
        if low is not None and high is not None:
            # A paired difference either way at that level tells them apart.
            return high < 0 or low > 0
    halves = [
        (r.adjusted_high - r.adjusted_low) / 2
        for r in (above, row)
        if r.adjusted_high is not None and r.adjusted_low is not None
    ]
    if len(halves) < 2 or above.adjusted_place is None or row.adjusted_place is None:
        return False
    return row.adjusted_place - above.adjusted_place > math.hypot(*halves)


def paired_difference(
    pairs: Mapping[tuple[str, str], Sequence[float]],
    a: str,
    b: str,
    *,
    confidence: float = 0.95,
) -> tuple[int, float, float | None, float | None] | None:
    """``a``'s luck-adjusted place less ``b``'s over the duplicate sets both played.

    ``pairs`` is what :class:`StandingsBuilder` keeps (``_PairSums``). Returns (shared sets,
    mean difference, low, high), the interval at ``confidence`` (95 % by default) and None
    below :data:`MIN_SAMPLES` sets; None if they never shared a set.
    """
    key, sign = ((a, b), 1.0) if a < b else ((b, a), -1.0)
    found = pairs.get(key)  # a pair is there once they shared a set
    if found is None:
        return None
    n, total, squares = found
    mean, low, high = _interval((n, sign * total, squares), confidence)
    return int(n), mean, low, high


def t95(df: int) -> float:
    """The two-sided 95 % quantile of Student's t with ``df`` degrees of freedom (``df >= 1``).

    ``t`` with ``P(|T| <= t) = 0.95``: 12.706 for one degree of freedom, 2.776 for 4, 2.042 for
    30, toward 1.960 (the normal's) as ``df`` grows. ``t_quantile(0.95, df)``; cached.
    """
    return t_quantile(0.95, df)


@functools.cache
def t_quantile(confidence: float, df: int) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom.

    ``t`` with ``P(|T| <= t) = confidence``: at 0.95, 12.706 for one degree of freedom and
    2.776 for 4; at 0.995, 127.32 and 5.598. Found by Newton's method on the distribution
    function, itself Simpson's rule over the density in steps of at most 0.01 (against the
    closed forms for one and two degrees of freedom its relative error is below 1e-10 up to
    0.9995, far below the printed digits); cached per ``(confidence, df)``.

    Raises:
        ValueError: ``df`` below 1, or ``confidence`` not strictly between 0 and 1.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    if not 0 < confidence < 1:
        raise ValueError(f"a confidence level is strictly between 0 and 1, not {confidence}")
    nu = float(df)
    log_c = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)

    def density(x: float) -> float:
        return math.exp(log_c - (nu + 1) / 2 * math.log1p(x * x / nu))

    def mass(x: float) -> float:  # P(0 <= T <= x)
        # 2000 steps up to 20 (every 95 % quantile: the values it always gave), more beyond,
        # so the far quantiles of high levels and few degrees of freedom stay as accurate.
        steps = 2000 * max(1, math.ceil(x / 20))
        h = x / steps
        odd = sum(density((2 * i - 1) * h) for i in range(1, steps // 2 + 1))
        even = sum(density(2 * i * h) for i in range(1, steps // 2))
        return h / 3 * (density(0.0) + 4 * odd + 2 * even + density(x))

    # The normal quantile starts the search (the first term of its expansion in 1 / df); at
    # 95 % the rounded constant it always started from, so 95 % intervals are bit for bit
    # those of before.
    z = _Z95 if confidence == 0.95 else NormalDist().inv_cdf(0.5 + confidence / 2)
    half = confidence / 2
    x = z + (z**3 + z) / (4 * nu)
    for _ in range(50):
        step = (mass(x) - half) / density(x)
        x -= step
        if abs(step) < 1e-10:
            break
    return x


def _csv_cell(value: Any) -> Any:
    """A CSV cell: text cleaned and kept from reading as a formula; None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = clean(value)
        return "'" + text if text.lstrip().startswith(_FORMULA_START) else text
    return value


def write_standings(rows: Sequence[BotStanding], out_dir: Path) -> tuple[Path, Path]:
    """Write ``standings.json`` and ``standings.csv`` into ``out_dir``; return their paths.

    The JSON keeps names and reasons exactly (JSON escapes every control character, and the
    file is ASCII); None is ``null``. In the CSV, text is cleaned (``arena._text.clean``),
    a cell that would start with ``= + - @`` gets a ``'`` prefix so no spreadsheet runs it
    as a formula, and None is an empty cell.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    js, cs = out_dir / "standings.json", out_dir / "standings.csv"
    data = [asdict(r) for r in rows]
    for d in data:
        for k, v in d.items():
            if isinstance(v, StandingStatus):
                d[k] = v.value
            elif isinstance(v, float) and not math.isfinite(v):
                d[k] = None
    js.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    with open(cs, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=[fl.name for fl in fields(BotStanding)])
        w.writeheader()
        w.writerows({k: _csv_cell(v) for k, v in d.items()} for d in data)
    return js, cs


class StandingsBuilder:
    """The standings table built one match at a time, in memory proportional to the bots.

    Per bot it keeps running sums, never the list of matches: the score's sum and sum of
    squares as exact fractions (so the mean and the interval are exactly those of the list
    of scores), places, firsts, chips, hands, and the openskill rating object. ``rows()``
    gives the table of what was added so far; ``compute_standings`` is this builder fed a
    list of outcomes.

    Outcomes must come in match-id order (the rating is order-dependent): ``add`` refuses one
    whose id sorts before the previous one's. A match that seats a bot that did not start
    counts for nobody, so it must not be added; ``rows`` refuses a ``did_not_start`` that
    names a bot it has seen.
    """

    __slots__ = ("_bots", "_last_id", "_model", "_pairs")

    def __init__(self) -> None:
        self._model = PlackettLuce()
        self._bots: dict[str, _BotSums] = {}
        self._last_id: str | None = None
        self._pairs = _PairSums()

    @property
    def bots(self) -> frozenset[str]:
        """The bots seated in the outcomes added so far."""
        return frozenset(self._bots)

    def difference(
        self, a: str, b: str, *, confidence: float = 0.95
    ) -> tuple[int, float, float | None, float | None] | None:
        """``a``'s luck-adjusted place less ``b``'s, paired by set: see :func:`paired_difference`.

        None also when some match added has no luck estimate.
        """
        pairs = self._pairs.snapshot()
        return None if pairs is None else paired_difference(pairs, a, b, confidence=confidence)

    def add(self, outcome: MatchOutcome) -> None:
        """Count one finished match.

        Raises:
            ValueError: its match id sorts before the previous outcome's.
        """
        if self._last_id is not None and outcome.match_id < self._last_id:
            raise ValueError(
                f"outcomes must come in match-id order: {outcome.match_id!r} after "
                f"{self._last_id!r}"
            )
        self._last_id = outcome.match_id
        self._pairs.add(outcome)
        k = len(outcome.bots)
        sums = []
        for seat, bot in enumerate(outcome.bots):
            s = self._bots.get(bot)
            if s is None:
                s = self._bots[bot] = _BotSums(self._model.rating(name=bot))
            place = outcome.placements[seat]
            score = Fraction(k - place, k - 1)
            s.n += 1
            s.score_sum += score
            s.score_squares += score * score
            s.place_sum += place
            luck = outcome.luck[seat] if outcome.luck is not None else None
            s.sets.add(outcome.match_id if outcome.group is None else outcome.group, place, luck)
            s.firsts += place == 1
            s.chips_sum += outcome.bankrolls[seat]
            s.net += outcome.bankrolls[seat] - outcome.start_bankroll
            s.hands += outcome.hands
            sums.append(s)
        teams = [[s.rating] for s in sums]
        rated = self._model.rate(teams, ranks=[float(p) for p in outcome.placements])
        for s, team in zip(sums, rated, strict=True):
            s.rating = team[0]

    def rows(
        self, did_not_start: Mapping[str, str] = _NOBODY, *, confidence: float = 0.95
    ) -> list[BotStanding]:
        """The table so far, as ``compute_standings`` gives it (see there).

        Args:
            did_not_start: bots that never started, each with the reason.
            confidence: the level of every interval and so of the bands (95 % by default).

        Raises:
            ValueError: a bot in ``did_not_start`` is seated in an added outcome, or
                ``confidence`` is not strictly between 0 and 1.
        """
        if not 0 < confidence < 1:
            raise ValueError(f"a confidence level is strictly between 0 and 1, not {confidence}")
        seated = sorted(did_not_start.keys() & self._bots.keys())
        if seated:
            raise ValueError(
                f"bots that did not start are seated in added outcomes: {', '.join(seated)}"
            )
        keyed: list[tuple[tuple[Fraction, Fraction, str], tuple[float, float], BotStanding]] = []
        for bot, s in self._bots.items():
            n = s.n
            mean, low, high = s.score_interval(confidence)
            mean_place = Fraction(s.place_sum, n)
            place_low, place_high, adjusted, adjusted_low, adjusted_high = s.sets.intervals(
                confidence
            )
            r = s.rating
            row = BotStanding(
                rank=None,
                tied=False,
                bot=bot,
                status=StandingStatus.RANKED,
                matches=n,
                score=float(mean),
                score_low=low,
                score_high=high,
                mean_place=float(mean_place),
                place_low=place_low,
                place_high=place_high,
                adjusted_place=adjusted,
                adjusted_low=adjusted_low,
                adjusted_high=adjusted_high,
                sets=s.sets.count,
                first_places=s.firsts,
                first_rate=s.firsts / n,
                mean_chips=s.chips_sum / n,
                chips_per_hand=s.net / s.hands if s.hands else 0.0,
                rating=r.mu,
                rating_low=r.mu - _Z95 * r.sigma,
                rating_high=r.mu + _Z95 * r.sigma,
                reason="",
            )
            keyed.append(((-mean, mean_place, bot), (low, high), row))
        pairs = self._pairs.snapshot()
        if pairs is not None and all(row.adjusted_place is not None for _, _, row in keyed):
            ordered = sorted(
                (row for _, _, row in keyed),
                key=lambda r: (round(r.adjusted_place or 0.0, 9), r.mean_place, r.bot),
            )
            ranks = _paired_ranks(ordered, pairs, confidence)
        else:
            keyed.sort(key=lambda k: k[0])
            ordered = [row for _, _, row in keyed]
            ranks = _band_ranks([interval for _, interval, _ in keyed])
        sizes = Counter(ranks)
        rows = [
            replace(row, rank=rank, tied=sizes[rank] > 1)
            for row, rank in zip(ordered, ranks, strict=True)
        ]
        rows.extend(_not_started(bot, did_not_start[bot]) for bot in sorted(did_not_start))
        return rows


class _PairSums:
    """Paired differences of luck-adjusted places, per pair of bots, over shared sets.

    For each pair ``(a, b)`` (names in order) that shared a duplicate set: how many sets,
    and the sum and sum of squares of ``a``'s set mean minus ``b``'s. Only the set being
    played is open (matches come in match-id order, a set's ids are consecutive). Once a
    match without a luck estimate is added, there are no paired differences at all.
    """

    __slots__ = ("_complete", "_key", "_open", "_sums")

    def __init__(self) -> None:
        self._sums: dict[tuple[str, str], list[float]] = {}
        self._key: object = None
        self._open: dict[str, list[float]] = {}  # bot -> [sum of adjusted places, matches]
        self._complete = True

    def add(self, outcome: MatchOutcome) -> None:
        """Count one match into its set."""
        if not self._complete:
            return
        if outcome.luck is None:
            self._complete = False
            self._sums.clear()
            self._open.clear()
            return
        key = outcome.match_id if outcome.group is None else outcome.group
        if self._open and key != self._key:
            self._close(self._sums)
        self._key = key
        for bot, place, luck in zip(outcome.bots, outcome.placements, outcome.luck, strict=True):
            acc = self._open.setdefault(bot, [0.0, 0])
            acc[0] += place - luck
            acc[1] += 1

    def _close(self, sums: dict[tuple[str, str], list[float]]) -> None:
        means = sorted((bot, total / n) for bot, (total, n) in self._open.items())
        for i, (a, mean_a) in enumerate(means):
            for b, mean_b in means[i + 1 :]:
                d = mean_a - mean_b
                acc = sums.setdefault((a, b), [0, 0.0, 0.0])
                _accumulate(acc, d)
        self._open = {}

    def snapshot(self) -> dict[tuple[str, str], list[float]] | None:
        """The sums with the open set counted (None without luck estimates); no mutation."""
        if not self._complete:
            return None
        sums = {k: list(v) for k, v in self._sums.items()}
        if self._open:
            opened = self._open
            self._close(sums)
            self._open = opened
        return sums


class _SetSums:
    """A bot's places averaged per duplicate set, summed over sets: intervals by set.

    Matches come in match-id order and a set's matches have consecutive ids, so only the set
    being played is open; each set's mean (raw, and luck-adjusted while every one of its
    matches has a luck estimate) goes into running sums when the next set begins.
    """

    __slots__ = ("_adj", "_open", "_open_adj", "_open_key", "_open_n", "_raw", "count")

    def __init__(self) -> None:
        self.count = 0
        self._open_key: object = None
        self._open_n = 0
        self._open = 0.0
        self._open_adj: float | None = 0.0
        self._raw = [0, 0.0, 0.0]  # sets, sum of set means, sum of their squares
        self._adj: list[float] | None = [0, 0.0, 0.0]  # None once a match lacks luck

    def add(self, key: object, place: int, luck: float | None) -> None:
        """One match of the bot: its set, its place and the places its luck was worth."""
        if self._open_n and key != self._open_key:
            self._close()
        if not self._open_n:
            self._open_key, self._open, self._open_adj = key, 0.0, 0.0
            self.count += 1
        self._open_n += 1
        self._open += place
        if self._open_adj is not None:
            self._open_adj = None if luck is None else self._open_adj + place - luck

    def _close(self) -> None:
        n = self._open_n
        _accumulate(self._raw, self._open / n)
        if self._adj is not None:
            if self._open_adj is None:
                self._adj = None
            else:
                _accumulate(self._adj, self._open_adj / n)
        self._open_n = 0

    def intervals(
        self, confidence: float = 0.95
    ) -> tuple[float | None, float | None, float | None, float | None, float | None]:
        """(place low, place high, adjusted mean, adjusted low, adjusted high) so far.

        The intervals at ``confidence``.
        """
        raw, adj = list(self._raw), None if self._adj is None else list(self._adj)
        if self._open_n:
            _accumulate(raw, self._open / self._open_n)
            if adj is not None and self._open_adj is not None:
                _accumulate(adj, self._open_adj / self._open_n)
            elif self._open_adj is None:
                adj = None
        _, place_low, place_high = _interval(raw, confidence)
        if adj is None:
            return place_low, place_high, None, None, None
        return (place_low, place_high, *_interval(adj, confidence))


def _accumulate(sums: list[float], value: float) -> None:
    sums[0] += 1
    sums[1] += value
    sums[2] += value * value


def _interval(
    sums: Sequence[float], confidence: float = 0.95
) -> tuple[float, float | None, float | None]:
    """Mean and ``confidence`` interval (Student's t) of values given as (n, sum, squares).

    Below :data:`MIN_SAMPLES` values no interval is given (None, None).
    """
    n, total, squares = sums
    mean = total / n
    if n < MIN_SAMPLES:
        return mean, None, None
    var = max(0.0, (squares - total * total / n) / (n - 1))
    half = t_quantile(confidence, int(n) - 1) * math.sqrt(var / n)
    return mean, mean - half, mean + half


@dataclass(slots=True)
class _BotSums:
    """One bot's running sums in a ``StandingsBuilder``."""

    rating: PlackettLuceRating
    sets: _SetSums = field(default_factory=_SetSums)
    n: int = 0
    score_sum: Fraction = Fraction(0)
    score_squares: Fraction = Fraction(0)
    place_sum: int = 0
    firsts: int = 0
    chips_sum: int = 0
    net: int = 0
    hands: int = 0

    def score_interval(self, confidence: float = 0.95) -> tuple[Fraction, float, float]:
        """The exact mean score and its ``confidence`` interval (Student's t), within [0, 1].

        From the sums: ``sum((v - mean)**2) == sum(v**2) - sum(v)**2 / n`` holds exactly for
        fractions, so the variance is the one the list of scores would give. Below
        :data:`MIN_SAMPLES` matches the interval is the whole range.
        """
        n = self.n
        mean = self.score_sum / n
        if n < MIN_SAMPLES:  # too few to estimate a spread: the score could be anything
            return mean, 0.0, 1.0
        var = (self.score_squares - self.score_sum * self.score_sum / n) / (n - 1)
        half = t_quantile(confidence, n - 1) * math.sqrt(var / n)
        m = float(mean)
        return mean, max(0.0, m - half), min(1.0, m + half)
