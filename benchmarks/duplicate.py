"""How much duplicate deals reduce the variance of a bot's ladder score.

Run: ``python benchmarks/duplicate.py [--groups N] [--bots random greedy counter]``.

In-process (no gRPC), the bundled bots play G groups of K matches at one table of K bots:
- duplicate: each group plays ONE deck seed K times with the seats rotated (what
  ``arena run`` does by default);
- plain: each group plays K matches with independent seeds and shuffled seats.
For each bot, a group's score is its mean placement score ``(K - place) / (K - 1)`` over
the group's K matches; the script prints the variance of that group score across groups
under both schemes and their ratio (plain / duplicate): how many times more matches plain
deals need for the same precision.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from flipflop import MatchConfig, load_bot, play_match

ROOT = Path(__file__).resolve().parent.parent


def _group(names: list[str], seeds: list[int], seatings: list[list[str]]) -> dict[str, float]:
    k = len(names)
    score = dict.fromkeys(names, 0.0)
    for seed, seats in zip(seeds, seatings, strict=True):
        bots = [load_bot(ROOT / "bots" / n) for n in seats]
        st = play_match(bots, MatchConfig(seats=k), seed)
        assert st.result is not None
        for seat, n in enumerate(seats):
            score[n] += (k - st.result.placements[seat]) / (k - 1) / k
    return score


def main() -> None:
    """Print the variance figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", type=int, default=60)
    p.add_argument("--bots", nargs="+", default=["random", "greedy", "counter"])
    args = p.parse_args()
    names = args.bots
    k = len(names)
    rng = random.Random(1)
    dup: dict[str, list[float]] = {n: [] for n in names}
    plain: dict[str, list[float]] = {n: [] for n in names}
    t0 = time.perf_counter()
    for g in range(args.groups):
        seed = rng.getrandbits(32)
        rot = [[names[(i + r) % k] for i in range(k)] for r in range(k)]
        for n, v in _group(names, [seed] * k, rot).items():
            dup[n].append(v)
        seeds = [rng.getrandbits(32) for _ in range(k)]
        seatings = [rng.sample(names, k) for _ in range(k)]
        for n, v in _group(names, seeds, seatings).items():
            plain[n].append(v)
        print(f"\rgroup {g + 1}/{args.groups}", end="", file=sys.stderr)
    print(file=sys.stderr)
    print(f"{args.groups} groups of {k} matches, bots: {' '.join(names)}")
    print(f"{'bot':<10} {'var plain':>12} {'var duplicate':>14} {'ratio':>7}")
    ratios = []
    for n in names:
        vp, vd = statistics.variance(plain[n]), statistics.variance(dup[n])
        ratios.append(vp / vd if vd else float("inf"))
        print(f"{n:<10} {vp:>12.5f} {vd:>14.5f} {ratios[-1]:>7.2f}")
    print(f"mean variance ratio (plain / duplicate): {statistics.mean(ratios):.2f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
