"""Other scoring units than the place: do they tell two close bots apart in fewer matches?

Run: ``python benchmarks/units.py [--sets N] [--jobs J]`` (issue 30: "chips-with-survival as
the scoring unit"). The bundled random, greedy and counter play ``--sets`` duplicate sets at
one 3-seat table, in-process (seeds ``units/<i>``, every rotation of the line-up, as
``benchmarks/separation.py``). Per match and seat, five units:

- ``place``: the placement (1 = best), what the standings rank by;
- ``adjusted``: the luck-adjusted placement (``arena.match._luck.adjusted_placements``);
- ``chips``: the final bankroll (0 once eliminated);
- ``chips-luck``: the final bankroll less the chips chance moved over the match (the sum of
  ``chip_luck`` over its hands: the flip/flop term and the dealt-hand model, each zero-mean
  whatever the bots do, so this estimates the same mean as ``chips``);
- ``place-time``: chips with survival, the mean over hands 1 to the hand cap of the seat's
  expected place by the independent-chip model after each hand (``icm_places``; once out,
  or once the match is over, its final place).

For counter against greedy, with the duplicate set as the unit (a set's value: counter's
mean over the rotations less greedy's), it prints a line per unit: the mean difference ``d``
with its 95 % half-width, the sd by set, and the matches a fixed paired sample needs to
separate the two at 95 % at that ``d``: ``3 · (1.96 · sd / d)²``; for ``adjusted`` and
``chips-luck`` also at the ``d`` of ``place`` and ``chips`` (each pair estimates one mean, so
at one ``d`` the ratio is their variance ratio). Then the order of the three bots by each
unit's mean: a unit that orders them otherwise than ``place`` ranks something else.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

from arena.match._luck import _places, adjusted_placements, chip_luck
from flipflop import MatchConfig, MatchState, load_bot, play_match

BOTS_DIR = Path(__file__).resolve().parent.parent / "bots"
LINEUP = ("counter", "greedy", "random")
UNITS = ("place", "adjusted", "chips", "chips-luck", "place-time")
Z95 = statistics.NormalDist().inv_cdf(0.975)

Values = dict[str, dict[str, float]]
"""Per bot, per unit: its value in one match."""


def units(state: MatchState) -> list[dict[str, float]]:
    """Per seat, its value in each unit for the finished match ``state``."""
    result = state.result
    assert result is not None
    n, stake = state.config.seats, state.config.stake
    cap = state.config.hand_cap or len(state.results)
    adjusted = adjusted_placements(state)
    luck = [0.0] * n
    place_time = [0.0] * n
    last = len(state.results)
    for deal, hand in zip(state.deals, state.results, strict=True):
        h = hand.hand_number
        in_play = [s for s in range(n) if (e := result.eliminated_in[s]) is None or e >= h]
        for s, x in enumerate(chip_luck(deal, hand, stake)):
            luck[s] += x
        lost = {s for s in in_play if deal.all_in[s] and s not in hand.game_winners}
        places = _places(hand.bankrolls, in_play, lost, stake, result.by_cap and h == last)
        for s in range(n):
            place_time[s] += places.get(s, float(result.placements[s]))
    return [
        {
            "place": float(result.placements[s]),
            "adjusted": adjusted[s],
            "chips": float(result.bankrolls[s]),
            "chips-luck": result.bankrolls[s] - luck[s],
            "place-time": (place_time[s] + (cap - last) * result.placements[s]) / cap,
        }
        for s in range(n)
    ]


def play_set(i: int) -> list[Values]:
    """Set ``i``: one match per rotation of the line-up; per match, each bot's values."""
    seed = f"units/{i}"
    out = []
    for r in range(len(LINEUP)):
        seats = [LINEUP[(j + r) % len(LINEUP)] for j in range(len(LINEUP))]
        bots = [load_bot(BOTS_DIR / name) for name in seats]
        state = play_match(bots, MatchConfig(seats=len(seats)), seed, match_id=f"{seed}/{r}")
        out.append(dict(zip(seats, units(state), strict=True)))
    return out


def main() -> None:
    """Play the sets, then print a line per unit and the bots' order by each."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", type=int, default=150)
    p.add_argument("--jobs", type=int, default=multiprocessing.cpu_count())
    args = p.parse_args()
    t0 = time.perf_counter()
    data: list[list[Values]] = []
    with multiprocessing.Pool(args.jobs) as pool:
        for got in pool.imap(play_set, range(args.sets)):
            data.append(got)
            print(f"\rset {len(data)}/{args.sets}", end="", file=sys.stderr)
    print(file=sys.stderr)
    print(
        f"units: {args.sets} sets of counter, greedy, random at 3 seats, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    diffs = {
        u: [statistics.fmean(m["counter"][u] - m["greedy"][u] for m in s) for s in data]
        for u in UNITS
    }
    d = {u: statistics.fmean(x) for u, x in diffs.items()}
    sd = {u: statistics.stdev(x) for u, x in diffs.items()}
    rotations = len(LINEUP)

    def matches(u: str, at: float) -> str:
        return "inf" if at == 0 else f"{rotations * (Z95 * sd[u] / at) ** 2:.0f}"

    common = {"adjusted": "place", "chips-luck": "chips"}
    for u in UNITS:
        half = Z95 * sd[u] / math.sqrt(len(diffs[u]))
        line = (
            f"units {u}: counter - greedy d {d[u]:+.3f} ± {half:.3f}, sd by set {sd[u]:.3f}, "
            f"matches to separate {matches(u, d[u])}"
        )
        if u in common:
            line += f" ({matches(u, d[common[u]])} at the d of {common[u]})"
        print(line)
    for u in UNITS:
        means = {b: statistics.fmean(m[b][u] for s in data for m in s) for b in LINEUP}
        best_first = sorted(LINEUP, key=means.__getitem__, reverse=u.startswith("chips"))
        print(f"units order by {u}: " + ", ".join(f"{b} {means[b]:.3f}" for b in best_first))


if __name__ == "__main__":
    main()
