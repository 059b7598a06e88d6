"""Try a reference-policy control variate (AIVAT-style) against the frozen dealt-hand model.

Run: ``python benchmarks/reference_luck.py [--reference counter] [--fit-matches N]
[--sets N] [--jobs J]``.

The term (issue 30, "control variates from each hand's realised chip outcome against its
expectation under a fixed reference policy played out by the engine"): for each hand, the
engine plays the hand again from its real deck, dealer and bankrolls with every seat played
by the reference bot, once for each rotation of the dealt five-card hands among the seats
dealt in (the stock and the dealing order kept). A seat's term is its game-pot chips with its
own hand less their mean over the rotations. Every rotation of a uniform deck is a uniform
deck, so the term averages zero over the deals whatever the bots do; it depends on chance and
on the reference policy only.

1. **Fit** (seeds ``luck-ref-fit/<i>``, random, greedy and counter at 3 seats, seats
   rotated): the game-pot chips of every seat and hand, less the flip/flop term, regressed on
   the frozen dealt-hand term and the reference term (least squares, no intercept).
2. **Check** (seeds ``luck-ref/<s>``, duplicate sets of counter, greedy and random at 3
   seats, every rotation): per-hand chip variance removed out of sample by the dealt-hand
   model, the reference term and both (fitted weights), the reference term's mean with a 95 %
   interval, and by set the variance of counter's place less greedy's, raw, adjusted as the
   arena does, and adjusted with the reference term added.

Progress goes to stderr. ``--fit-matches 60 --sets 100``: about 20 minutes on two cores.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/…`
from arena.match._luck import adjusted_placements, dealt_hand_luck, flip_flop_luck
from benchmarks.luck import BOTS, BOTS_DIR, _least_squares, _play
from flipflop import (
    Bot,
    MatchConfig,
    MatchInfo,
    MatchState,
    Pot,
    deck_for,
    load_bot,
)
from flipflop._harness import _decide

HAND = 5


@cache
def _reference(name: str) -> Bot:
    return load_bot(BOTS_DIR / name)


def _rotated(deck: Sequence[int], seats: int, r: int) -> list[int]:
    """``deck`` with the dealt hands moved ``r`` places along the dealing order (R-DEAL)."""
    out = list(deck)
    for j in range(HAND):
        for i in range(seats):
            out[j * seats + i] = deck[j * seats + (i + r) % seats]
    return out


def _game_chips(
    config: MatchConfig, deck: list[int], dealer: int, bankrolls: list[int], policy: str
) -> list[int]:
    """Each seat's game-pot chips when ``policy`` plays every seat of one hand of ``deck``."""
    state = MatchState(config, b"reference", decks=[deck], dealer=dealer, bankrolls=bankrolls)
    bot = _reference(policy)
    names = tuple(f"p{s}" for s in range(config.seats))
    for s in range(config.seats):
        bot.start_match(MatchInfo("reference", s, names, config, 0, 0))
    while not state.is_over and not state.results:
        _decide(state, bot, strict=True)  # play_match's turn, one decision at a time
    game = [0] * config.seats
    for p in state.results[0].payments:
        if p.pot is Pot.GAME:
            game[p.seat] -= p.amount
    return game


def reference_luck(state: MatchState, policy: str) -> list[tuple[float, ...]]:
    """Per hand, per seat: game-pot chips with its own hand less the mean over rotations."""
    config, n = state.config, state.config.seats
    terms: list[tuple[float, ...]] = []
    for deal in state.deals:
        dealt = [s for s in range(n) if deal.dealt[s]]
        # Seats not dealt in are given no chips, so that the engine deals as it did.
        bankrolls = [b if deal.dealt[s] else 0 for s, b in enumerate(deal.bankrolls)]
        deck = deck_for(state.seed, deal.hand_number)
        outs = [
            _game_chips(config, _rotated(deck, len(dealt), r), deal.dealer, bankrolls, policy)
            for r in range(len(dealt))
        ]
        terms.append(
            tuple(
                outs[0][s] - statistics.fmean(o[s] for o in outs) if deal.dealt[s] else 0.0
                for s in range(n)
            )
        )
    return terms


Row = tuple[float, float, float, float, str]
"""One seat in one hand: chip change, flip/flop term, dealt-hand term, reference term, bot."""


def _rows(state: MatchState, ref: Sequence[Sequence[float]], lineup: Sequence[str]) -> list[Row]:
    stake = state.config.stake
    rows: list[Row] = []
    for deal, hand, r in zip(state.deals, state.results, ref, strict=True):
        ff = flip_flop_luck(deal, hand)
        dh = dealt_hand_luck(deal, stake)
        rows += [
            (float(hand.deltas[s]), ff[s], dh[s], r[s], lineup[s])
            for s in range(len(r))
            if deal.dealt[s]
        ]
    return rows


def _fit_job(job: tuple[str, tuple[str, ...], str]) -> list[Row]:
    seed, lineup, policy = job
    state = _play(seed, lineup)
    return _rows(state, reference_luck(state, policy), lineup)


SetMatch = tuple[str, tuple[str, ...], list[int], tuple[float, ...], tuple[float, ...], list[Row]]


def _check_job(job: tuple[str, tuple[str, ...], str, float, float]) -> SetMatch:
    seed, lineup, policy, a, b = job
    state = _play(seed, lineup)
    assert state.result is not None
    ref = reference_luck(state, policy)
    # The dealt-hand term is already in the arena's adjustment: weigh it a, the reference b.
    stake = state.config.stake
    extra = [
        tuple((a - 1) * d + b * r for d, r in zip(dealt_hand_luck(deal, stake), terms, strict=True))
        for deal, terms in zip(state.deals, ref, strict=True)
    ]
    return (
        seed,
        lineup,
        list(state.result.placements),
        adjusted_placements(state),
        adjusted_placements(state, extra=extra),
        _rows(state, ref, lineup),
    )


def _share(rows: Sequence[Row], weights: tuple[float, float]) -> float:
    """The share of per-hand chip variance removed beyond the flip/flop term's."""
    total = statistics.pvariance([r[0] for r in rows])
    after_ff = [r[0] - r[1] for r in rows]
    left = [x - weights[0] * r[2] - weights[1] * r[3] for x, r in zip(after_ff, rows, strict=True)]
    return (statistics.pvariance(after_ff) - statistics.pvariance(left)) / total


def main() -> None:
    """Fit the weights, then check them on duplicate sets."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reference", default="counter", choices=BOTS, help="the reference bot")
    p.add_argument("--fit-matches", type=int, default=60)
    p.add_argument("--sets", type=int, default=100)
    p.add_argument("--jobs", type=int, default=multiprocessing.cpu_count())
    args = p.parse_args()
    t0 = time.perf_counter()
    fit_jobs = [
        (f"luck-ref-fit/{i}", tuple(BOTS[(j + i) % 3] for j in range(3)), args.reference)
        for i in range(args.fit_matches)
    ]
    lineup = ("counter", "greedy", "random")
    with multiprocessing.Pool(args.jobs) as pool:
        fit: list[Row] = []
        for i, got in enumerate(pool.imap_unordered(_fit_job, fit_jobs), 1):
            fit += got
            print(f"\rfit {i}/{len(fit_jobs)}", end="", file=sys.stderr)
        print(file=sys.stderr)
        a, b = _least_squares([(r[2], r[3]) for r in fit], [r[0] - r[1] for r in fit])
        (alone,) = _least_squares([(r[3],) for r in fit], [r[0] - r[1] for r in fit])
        print(
            f"fit: {len(fit_jobs)} matches, {len(fit)} seat-hands; weights: dealt hand {a:.3f}, "
            f"reference {b:.3f} (alone {alone:.3f})"
        )
        check_jobs = [
            (f"luck-ref/{s}", lineup[r:] + lineup[:r], args.reference, a, b)
            for s in range(args.sets)
            for r in range(3)
        ]
        got_all: list[SetMatch] = []
        for i, got_one in enumerate(pool.imap_unordered(_check_job, check_jobs), 1):
            got_all.append(got_one)
            print(f"\rcheck {i}/{len(check_jobs)}", end="", file=sys.stderr)
        print(file=sys.stderr)
    rows = [r for m in got_all for r in m[5]]
    means = []
    for bot in lineup:
        mine = [r[3] for r in rows if r[4] == bot]
        half = 1.96 * statistics.stdev(mine) / math.sqrt(len(mine))
        means.append(f"{bot} {statistics.fmean(mine):+.3f} ± {half:.3f}")
    print(
        f"check: {args.sets} sets, {len(rows)} seat-hands; the reference term's mean per bot "
        f"(chips, 0 by construction): {', '.join(means)}"
    )
    print(
        "per-hand chip variance removed out of sample beyond the flip/flop term: dealt hand "
        f"{_share(rows, (1.0, 0.0)):.1%}, reference {_share(rows, (0.0, alone)):.1%}, "
        f"both {_share(rows, (a, b)):.1%}"
    )
    by_set: dict[str, list[tuple[float, float, float]]] = {}
    for seed, seats, places, adjusted, with_ref, _ in got_all:
        c, g = seats.index("counter"), seats.index("greedy")
        by_set.setdefault(seed, []).append(
            (places[c] - places[g], adjusted[c] - adjusted[g], with_ref[c] - with_ref[g])
        )
    sets = [tuple(statistics.fmean(x[k] for x in v) for k in range(3)) for v in by_set.values()]
    raw, adj, ref = (statistics.variance([x[k] for x in sets]) for k in range(3))
    print(
        f"by set, counter - greedy: variance raw {raw:.4f}, adjusted {adj:.4f} ({raw / adj:.2f}x "
        f"lower), adjusted with the reference {ref:.4f} ({raw / ref:.2f}x lower)"
    )
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
