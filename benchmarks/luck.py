"""Fit the dealt-hand model of the luck estimate, then measure the estimate on fresh matches.

Run: ``python benchmarks/luck.py [--fit-matches N] [--check-matches N] [--jobs J]``.

1. **Fit** (seeds ``luck-fit/0`` …): the bundled bots random, greedy and counter play
   in-process at 3, 4 and 5 seats (line-ups drawn with a fixed ``random.Random``). For every
   seat dealt in, every hand, the game-pot chips in stakes (antes, extra stakes and wins of
   the game pot, R-FIFTY-PAY's side pot included) are regressed by least squares on the
   centred features of its dealt hand and of the others' mean (``arena.match._luck.features``).
   Then what the dealt-hand model leaves of those chips is regressed on the stock draws'
   regressors, the seat's own and the others' mean (``arena.match._luck.draw_regressors``).
   Prints the coefficients of both models, as code to paste into ``arena/match/_luck.py``,
   and the share of per-hand chip variance each luck term removes. ``--draws-only`` keeps
   the frozen ``DEALT_HAND_MODEL`` and fits the draws' model alone, on what it leaves.
2. **Check** (seeds ``luck-check/0`` …, never used for fitting): the three bots at a 3-seat
   table, seats rotated, with the fitted model. Prints per bot its mean luck in places with
   a 95 % interval, mean raw and adjusted placement, their variances, and the slope of
   placement on luck (1 if the luck places are all of chance's effect and no more).

Progress goes to stderr. The default sizes take about ten minutes on two cores (the
5-seat matches of the counter bot are the slow part).

``python benchmarks/luck.py --slope N`` instead measures what the slope of placement on luck
depends on, with the frozen model (no fit): ``N`` matches at 3 seats (seeds
``luck-slope/<field>/<i>``) for each field: the three bots (seats rotated), and each bot
three times. Per field it prints the slope with a 95 % interval (matches resampled) and the
calibration of the independent-chip model early in a match: the slope of the final place on
the model's expected place after each of hands 1 to 4 (1 where chips after a hand convert
into places at the model's rate); and for the mixed field the slope of each bot's own
seats. ``--slope 150``: about five minutes on two cores.
"""

from __future__ import annotations

import argparse
import datetime
import math
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from arena.match._luck import (
    DEALT_HAND_MODEL,
    DRAW_FEATURE_NAMES,
    FEATURE_MEANS,
    FEATURE_NAMES,
    TABLE_FEATURE_NAMES,
    DealtHandModel,
    DrawModel,
    adjusted_placements,
    draw_regressors,
    flip_flop_luck,
    icm_places,
    luck_places,
    regressors,
)
from flipflop import MatchConfig, MatchState, Pot, load_bot, play_match

BOTS_DIR = Path(__file__).resolve().parent.parent / "bots"
BOTS = ("random", "greedy", "counter")

Row = tuple[float, float, float, tuple[float, ...], tuple[float, ...]]
"""One seat in one hand: chip change, flip/flop luck, game-pot chips in stakes, the dealt
hands' regressors, the draws' (the seat's own, then the others' mean)."""


def _play(seed: str, lineup: Sequence[str]) -> MatchState:
    bots = [load_bot(BOTS_DIR / name) for name in lineup]
    return play_match(bots, MatchConfig(seats=len(lineup)), seed, strict=False)


def _rows(state: MatchState) -> list[Row]:
    """Per hand and seat dealt in, the regression data."""
    stake = state.config.stake
    rows: list[Row] = []
    none = (0.0,) * len(DRAW_FEATURE_NAMES)
    for deal, hand, drawn in zip(state.deals, state.results, draw_regressors(state), strict=True):
        xs = regressors(deal)
        game = dict.fromkeys(xs, 0)
        for p in hand.payments:
            if p.pot is Pot.GAME and p.seat in game:
                game[p.seat] -= p.amount
        ff = flip_flop_luck(deal, hand)
        for s, x in xs.items():
            others = [drawn.get(o, none) for o in xs if o != s]
            mean = tuple(sum(o[i] for o in others) / len(others) for i in range(len(none)))
            rows.append(
                (float(hand.deltas[s]), ff[s], game[s] / stake, x, drawn.get(s, none) + mean)
            )
    return rows


def _fit_job(job: tuple[str, tuple[str, ...]]) -> list[Row]:
    return _rows(_play(*job))


Seat = tuple[str, int, float, float]
"""One seat of a checked match: bot, placement, luck in places, adjusted placement."""


def _check_job(
    job: tuple[str, tuple[str, ...], DealtHandModel, DrawModel],
) -> tuple[list[Seat], list[Row]]:
    seed, lineup, model, draws = job
    state = _play(seed, lineup)
    assert state.result is not None
    luck = luck_places(state, model, draws=draws)
    adjusted = adjusted_placements(state, model, draws=draws)
    seats = [
        (name, state.result.placements[s], luck[s], adjusted[s]) for s, name in enumerate(lineup)
    ]
    return seats, _rows(state)


def _least_squares(xs: Sequence[Sequence[float]], ys: Sequence[float]) -> list[float]:
    """Coefficients ``b`` minimising ``Σ (y - b·x)²`` (no intercept: every x is centred)."""
    k = len(xs[0])
    a = [[sum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    v = [sum(x[i] * y for x, y in zip(xs, ys, strict=True)) for i in range(k)]
    for c in range(k):  # Gauss-Jordan with partial pivoting on the normal equations
        p = max(range(c, k), key=lambda r: abs(a[r][c]))
        a[c], a[p], v[c], v[p] = a[p], a[c], v[p], v[c]
        for r in range(k):
            if r != c and a[r][c]:
                f = a[r][c] / a[c][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c], strict=True)]
                v[r] -= f * v[c]
    return [v[i] / a[i][i] for i in range(k)]


def _shares(
    rows: Sequence[Row], model: DealtHandModel, draws: DrawModel, stake: int
) -> tuple[float, float, float]:
    """Shares of per-hand chip variance removed: by the flip/flop term, the dealt hand, draws."""
    coef = model.coefficients
    draw_coef = (*draws.own, *draws.others)
    raw = [r[0] for r in rows]
    no_ff = [r[0] - r[1] for r in rows]
    no_both = [
        c - stake * sum(b * x for b, x in zip(coef, r[3], strict=True))
        for c, r in zip(no_ff, rows, strict=True)
    ]
    no_draws = [
        c - stake * sum(b * x for b, x in zip(draw_coef, r[4], strict=True))
        for c, r in zip(no_both, rows, strict=True)
    ]
    v = statistics.pvariance(raw)
    v_ff, v_both = statistics.pvariance(no_ff), statistics.pvariance(no_both)
    return 1 - v_ff / v, (v_ff - v_both) / v, (v_both - statistics.pvariance(no_draws)) / v


def _interval(xs: Sequence[float]) -> tuple[float, float]:
    return statistics.mean(xs), 1.96 * statistics.stdev(xs) / math.sqrt(len(xs))


SlopeMatch = tuple[str, tuple[str, ...], list[int], list[float], list[tuple[float, int]], int]
"""Field, line-up, placements, luck in places, (expected place after hands 1-4, final place),
hands played."""

EARLY_HANDS = 4
"""The calibration of the independent-chip model is read after each of the first hands."""


def _slope_job(job: tuple[str, str, tuple[str, ...]]) -> SlopeMatch:
    field, seed, lineup = job
    state = _play(seed, lineup)
    result = state.result
    assert result is not None
    early: list[tuple[float, int]] = []
    for hand in state.results[: min(EARLY_HANDS, len(state.results) - 1)]:
        h = hand.hand_number
        alive = [s for s, e in enumerate(result.eliminated_in) if e is None or e > h]
        out = [s for s, e in enumerate(result.eliminated_in) if e == h]
        expected = icm_places(hand.bankrolls, alive, out)
        early += [(expected[s], result.placements[s]) for s in (*alive, *out)]
    luck = luck_places(state)
    return field, lineup, list(result.placements), list(luck), early, len(state.results)


def _slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    return statistics.linear_regression(xs, ys).slope


def _slope_interval(got: Sequence[SlopeMatch], rounds: int = 400) -> tuple[float, float]:
    """A 95 % interval of the slope of placement on luck, the matches resampled."""
    rng = random.Random(30)
    slopes = []
    for _ in range(rounds):
        pick = [got[rng.randrange(len(got))] for _ in got]
        slopes.append(_slope([x for m in pick for x in m[3]], [p for m in pick for p in m[2]]))
    slopes.sort()
    return slopes[int(0.025 * rounds)], slopes[int(0.975 * rounds) - 1]


def slope_study(matches: int, jobs: int) -> None:
    """``--slope``: the slope of placement on luck by field, and what it follows."""
    fields = {"mixed": None, **{f"{b} x3": (b, b, b) for b in BOTS}}
    work = [
        (field, f"luck-slope/{field}/{i}", lineup or tuple(BOTS[(j + i) % 3] for j in range(3)))
        for field, lineup in fields.items()
        for i in range(matches)
    ]
    t0 = time.perf_counter()
    got: list[SlopeMatch] = []
    with multiprocessing.Pool(jobs) as pool:
        for i, one in enumerate(pool.imap_unordered(_slope_job, work, chunksize=4), 1):
            got.append(one)
            print(f"\rslope {i}/{len(work)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    print(f"slope of placement on luck, {matches} matches at 3 seats per field (frozen model):")
    print(f"{'field':<11} {'slope':>6} {'95 %':>14} {'early calibration':>18} {'mean hands':>11}")
    for field in fields:
        mine = [m for m in got if m[0] == field]
        lo, hi = _slope_interval(mine)
        xs, ys = [x for m in mine for x in m[3]], [p for m in mine for p in m[2]]
        early = [e for m in mine for e in m[4]]
        calibration = _slope([e[0] for e in early], [e[1] for e in early])
        hands = statistics.mean(m[5] for m in mine)
        print(
            f"{field:<11} {_slope(xs, ys):>6.3f} {lo:>6.3f} to {hi:<6.3f}"
            f" {calibration:>18.3f} {hands:>11.0f}"
        )
    mixed = [m for m in got if m[0] == "mixed"]
    for bot in BOTS:
        seats = [(m[3][s], m[2][s]) for m in mixed for s, name in enumerate(m[1]) if name == bot]
        print(f"  {bot}'s seats in the mixed field: slope {_slope(*zip(*seats, strict=True)):.3f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


def main() -> None:
    """Fit, print the coefficients and the variance shares, then check on fresh seeds."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fit-matches", type=int, default=24)
    p.add_argument("--check-matches", type=int, default=90)
    p.add_argument("--jobs", type=int, default=multiprocessing.cpu_count())
    p.add_argument(
        "--draws-only",
        action="store_true",
        help="keep the frozen dealt-hand model; fit the stock draws' model alone",
    )
    p.add_argument(
        "--slope",
        type=int,
        metavar="N",
        help="no fit: N matches per field, the slope of placement on luck and what it follows",
    )
    args = p.parse_args()
    if args.slope:
        slope_study(args.slope, args.jobs)
        return
    rng = random.Random(16)
    fit_jobs = [
        (f"luck-fit/{i}", tuple(rng.choice(BOTS) for _ in range(3 + i % 3)))
        for i in range(args.fit_matches)
    ]
    t0 = time.perf_counter()
    rows: list[Row] = []
    with multiprocessing.Pool(args.jobs) as pool:
        for i, fitted in enumerate(pool.imap_unordered(_fit_job, fit_jobs), 1):
            rows += fitted
            print(f"\rfit {i}/{len(fit_jobs)}", end="", file=sys.stderr)
        print(file=sys.stderr)
        k = len(FEATURE_NAMES)
        how = (
            f"python benchmarks/luck.py --fit-matches {args.fit_matches}"
            f"{' --draws-only' if args.draws_only else ''}, "
            f"{datetime.date.today().isoformat()}: {len(rows)} seat-hands of random, "
            "greedy and counter at 3-5 seats, seeds luck-fit/0..."
        )
        if args.draws_only:
            model = DEALT_HAND_MODEL
        else:
            coef = _least_squares([r[3] for r in rows], [r[2] for r in rows])
            model = DealtHandModel(
                own=tuple(round(c, 4) for c in coef[:k]),
                others=tuple(round(c, 4) for c in coef[k : 2 * k]),
                table=tuple(round(c, 4) for c in coef[2 * k :]),
                fitted=how,
            )
        left = [  # the game-pot chips in stakes that the dealt-hand model leaves
            r[2] - sum(b * x for b, x in zip(model.coefficients, r[3], strict=True)) for r in rows
        ]
        d = len(DRAW_FEATURE_NAMES)
        draw_coef = _least_squares([r[4] for r in rows], left)
        draws = DrawModel(
            own=tuple(round(c, 4) for c in draw_coef[:d]),
            others=tuple(round(c, 4) for c in draw_coef[d:]),
            fitted=how,
        )
        stake = MatchConfig().stake
        ff_share, dh_share, draw_share = _shares(rows, model, draws, stake)
        print(f"fit: {args.fit_matches} matches, {len(rows)} seat-hands")
        print(f"{'feature':<10} {'mean':>10} {'own':>9} {'others':>9}")
        for name, mu, a, b in zip(
            FEATURE_NAMES, FEATURE_MEANS, model.own, model.others, strict=True
        ):
            print(f"{name:<10} {mu:>10.5f} {a:>9.4f} {b:>9.4f}")
        for name, c in zip(TABLE_FEATURE_NAMES, model.table, strict=True):
            print(f"{name:<10} {0:>10.5f} {c:>9.4f}")
        for name, a, b in zip(DRAW_FEATURE_NAMES, draws.own, draws.others, strict=True):
            print(f"draw {name:<5} {0:>10.5f} {a:>9.4f} {b:>9.4f}")
        if not args.draws_only:
            print(f"DEALT_HAND_MODEL = {model!r}")
        print(f"DRAW_MODEL = {draws!r}")
        print(
            f"per-hand chip variance removed: flip/flop {ff_share:.1%}, "
            f"dealt hand {dh_share:.1%} more, stock draws {draw_share:.1%} more"
        )
        check_jobs = [
            (f"luck-check/{i}", tuple(BOTS[(j + i) % 3] for j in range(3)), model, draws)
            for i in range(args.check_matches)
        ]
        matches: list[list[Seat]] = []
        check_rows: list[Row] = []
        for i, (got, got_rows) in enumerate(pool.imap_unordered(_check_job, check_jobs), 1):
            matches.append(got)
            check_rows += got_rows
            print(f"\rcheck {i}/{len(check_jobs)}", end="", file=sys.stderr)
        print(file=sys.stderr)
    ff2, dh2, draw2 = _shares(check_rows, model, draws, stake)
    print(
        f"check: {args.check_matches} matches at 3 seats; out of sample, per-hand chip variance "
        f"removed: flip/flop {ff2:.1%}, dealt hand {dh2:.1%} more, stock draws {draw2:.1%} "
        f"more ({len(check_rows)} seat-hands)"
    )
    print(
        f"{'bot':<8} {'luck (places)':>18} {'placement':>10} {'adjusted':>9}"
        f" {'var raw':>8} {'var adj':>8} {'ratio':>6}"
    )
    seats = [x for m in matches for x in m]
    for name in BOTS:
        mine = [x for x in seats if x[0] == name]
        m, h = _interval([x[2] for x in mine])
        raw = [float(x[1]) for x in mine]
        adj = [x[3] for x in mine]
        vr, va = statistics.variance(raw), statistics.variance(adj)
        print(
            f"{name:<8} {m:>+9.3f} ± {h:<6.3f} {statistics.mean(raw):>10.3f}"
            f" {statistics.mean(adj):>9.3f} {vr:>8.3f} {va:>8.3f} {vr / va:>6.2f}"
        )
    print("paired (same match) placement differences:")
    for i, one in enumerate(BOTS):
        for two in BOTS[i + 1 :]:
            pairs = [({x[0]: x for x in m}[one], {x[0]: x for x in m}[two]) for m in matches]
            raw_d = [float(x[1] - y[1]) for x, y in pairs]
            adj_d = [x[3] - y[3] for x, y in pairs]
            vr, va = statistics.variance(raw_d), statistics.variance(adj_d)
            print(
                f"  {one} - {two}: mean raw {statistics.mean(raw_d):+.3f}, adjusted "
                f"{statistics.mean(adj_d):+.3f}; variance {vr:.3f} -> {va:.3f} ({vr / va:.2f}x)"
            )
    lucks = [x[2] for x in seats]
    slope = statistics.linear_regression(lucks, [float(x[1]) for x in seats]).slope
    print(f"slope of placement on luck: {slope:.3f} (theory: 1)")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
