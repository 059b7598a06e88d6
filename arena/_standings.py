"""Standings by bankroll survival, across the matches of a ladder.

Per bot, over the matches it played (see docs/arena.md for the definitions):

- **score**: placement points scaled to the table, ``(K - place) / (K - 1)``: 1 for first,
  0 for last, whatever the table size ``K``; its mean with a 95 % confidence interval
  (normal approximation, ``mean +/- 1.96 * sd / sqrt(n)``);
- **mean place** (1 is best) and **survival rate** (share of matches placed first);
- **mean final chips** and **chips per hand** (net chips over all its matches divided by the
  hands those matches lasted);
- a **rating** from openskill's Plackett-Luce model fed every match's placements in match
  order, shown as ``mu`` with the 95 % interval ``mu +/- 1.96 sigma``;
- **tied**: bots are ranked by mean score; a bot whose score interval overlaps the interval
  of the first bot of the current tier joins that tier, and tiers share a rank.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from openskill.models import PlackettLuce

__all__ = ["BotStanding", "MatchOutcome", "compute_standings", "write_standings"]

_Z95 = 1.959964


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
    """

    match_id: str
    bots: tuple[str, ...]
    placements: tuple[int, ...]
    bankrolls: tuple[int, ...]
    start_bankroll: int
    hands: int


@dataclass(frozen=True, slots=True)
class BotStanding:
    """One row of the standings table."""

    rank: int
    tied: bool
    bot: str
    matches: int
    score: float
    score_low: float
    score_high: float
    mean_place: float
    survival_rate: float
    mean_chips: float
    chips_per_hand: float
    rating: float
    rating_low: float
    rating_high: float


def _mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, -math.inf, math.inf
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = _Z95 * math.sqrt(var / n)
    return mean, mean - half, mean + half


def compute_standings(outcomes: Sequence[MatchOutcome]) -> list[BotStanding]:
    """The standings table, best first, from finished matches (any order: sorted here)."""
    ordered = sorted(outcomes, key=lambda o: o.match_id)
    model = PlackettLuce()
    ratings = {}
    scores: dict[str, list[float]] = {}
    places: dict[str, list[int]] = {}
    chips: dict[str, list[int]] = {}
    net: dict[str, int] = {}
    hands: dict[str, int] = {}
    for o in ordered:
        k = len(o.bots)
        for seat, bot in enumerate(o.bots):
            if bot not in ratings:
                ratings[bot] = model.rating(name=bot)
            place = o.placements[seat]
            scores.setdefault(bot, []).append((k - place) / (k - 1))
            places.setdefault(bot, []).append(place)
            chips.setdefault(bot, []).append(o.bankrolls[seat])
            net[bot] = net.get(bot, 0) + o.bankrolls[seat] - o.start_bankroll
            hands[bot] = hands.get(bot, 0) + o.hands
        teams = [[ratings[b]] for b in o.bots]
        rated = model.rate(teams, ranks=[float(p) for p in o.placements])
        for b, team in zip(o.bots, rated, strict=True):
            ratings[b] = team[0]
    rows = []
    for bot in scores:
        mean, low, high = _mean_ci(scores[bot])
        r = ratings[bot]
        rows.append(
            BotStanding(
                rank=0,
                tied=False,
                bot=bot,
                matches=len(scores[bot]),
                score=mean,
                score_low=low,
                score_high=high,
                mean_place=sum(places[bot]) / len(places[bot]),
                survival_rate=sum(p == 1 for p in places[bot]) / len(places[bot]),
                mean_chips=sum(chips[bot]) / len(chips[bot]),
                chips_per_hand=net[bot] / hands[bot] if hands[bot] else 0.0,
                rating=r.mu,
                rating_low=r.mu - _Z95 * r.sigma,
                rating_high=r.mu + _Z95 * r.sigma,
            )
        )
    rows.sort(key=lambda r: (-r.score, r.mean_place, r.bot))
    out: list[BotStanding] = []
    tier_rank, tier_low = 0, math.inf
    for i, row in enumerate(rows):
        if i == 0 or row.score_high < tier_low:  # no overlap with the tier's leader: new tier
            tier_rank, tier_low = i + 1, row.score_low
        out.append(replace(row, rank=tier_rank))
    sizes = {r.rank: sum(x.rank == r.rank for x in out) for r in out}
    return [replace(r, tied=sizes[r.rank] > 1) for r in out]


def write_standings(rows: Sequence[BotStanding], out_dir: Path) -> tuple[Path, Path]:
    """Write ``standings.json`` and ``standings.csv`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js, cs = out_dir / "standings.json", out_dir / "standings.csv"
    data = [asdict(r) for r in rows]
    for d in data:
        for k, v in d.items():
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
    js.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    with open(cs, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(data[0]) if data else ["bot"])
        w.writeheader()
        w.writerows(data)
    return js, cs
