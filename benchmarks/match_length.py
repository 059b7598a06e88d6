"""How matches end under the default MatchConfig: by survival or by the hand cap.

Run: ``python benchmarks/match_length.py [--matches N] [--bots random greedy counter]``.
Plays the bundled bots in-process at 4-seat tables (the bots cycled through the seats) with
``MatchConfig()``'s defaults and prints the share of matches the hand cap ended, and the
distribution of match length in hands. Used to choose the defaults (docs/engine.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from flipflop import MatchConfig, load_bot, play_match

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    """Print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--matches", type=int, default=200)
    p.add_argument("--bots", nargs="+", default=["random", "greedy", "counter"])
    args = p.parse_args()
    config = MatchConfig()
    hands: list[int] = []
    by_cap = 0
    t0 = time.perf_counter()
    for m in range(args.matches):
        names = [args.bots[(m + s) % len(args.bots)] for s in range(config.seats)]
        state = play_match([load_bot(ROOT / "bots" / n) for n in names], config, seed=m)
        assert state.result is not None
        hands.append(state.result.hands)
        by_cap += state.result.by_cap
        print(f"\r{m + 1}/{args.matches}", end="", file=sys.stderr)
    print(file=sys.stderr)
    q = statistics.quantiles(hands, n=20)
    print(f"{config}")
    print(f"bots: {' '.join(args.bots)}; {args.matches} matches")
    print(f"ended by the hand cap: {by_cap} ({by_cap / args.matches:.1%})")
    mean, median = statistics.mean(hands), statistics.median(hands)
    print(
        f"hands per match: mean {mean:.1f}, median {median:.0f},"
        f" 95th percentile {q[18]:.0f}, max {max(hands)}"
    )
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
