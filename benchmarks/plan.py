"""Ladder planning: time and peak memory of ``plan_ladder`` for a large ladder, and its spread.

Run: ``python benchmarks/plan.py [--repeat R]``.

Plans (duplicate deals, as ``arena run`` does by default):

- 1,000 bots at tables of 5, 10,000 matches (2,000 tables): the target of issue 10 is
  at most 1 s and 100 MB;
- 64 bots at tables of 5, 30 matches: the planner that built every one of the C(64, 5) =
  7.6 million possible tables took 655 MB for it;
- 1,000 bots at tables of 5, 10,000 matches without duplicate deals (10,000 tables).

Each plan is made in a fresh child process. The time is the best of ``--repeat`` runs; the
memory is the ``tracemalloc`` peak of one more run (everything Python allocates while
planning, the returned plan included) and the growth of the process's peak resident set
(``ru_maxrss``) over the untraced runs. Prints one line per plan, starting ``plan NxKxM:``
(``plan NxKxM plain:`` without duplicate deals) so a script can read it, then the plan's
spread (``plan_spread``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

from arena.ladder._plan import plan_ladder, plan_spread

CASES = [(1000, 5, 10_000, True), (64, 5, 30, True), (1000, 5, 10_000, False)]


def measure(n: int, k: int, matches: int, duplicate: bool, repeat: int) -> dict[str, object]:
    """Plan one ladder ``repeat`` times untraced, then once traced; return the figures."""
    bots = [f"bot{i:04d}" for i in range(n)]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    best = float("inf")
    for seed in range(repeat):
        start = time.perf_counter()
        plan = plan_ladder(bots, matches=matches, table_size=k, seed=seed, duplicate=duplicate)
        best = min(best, time.perf_counter() - start)
        del plan
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
    tracemalloc.start()
    plan = plan_ladder(bots, matches=matches, table_size=k, seed=0, duplicate=duplicate)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "seconds": best,
        "peak_mb": peak / 2**20,
        "rss_mb": grown / 2**10,  # ru_maxrss is in KiB on Linux
        "matches": len(plan),
        "spread": str(plan_spread(plan, bots)),
    }


def main() -> None:
    """Print the figures, one child process per plan."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--child", nargs=4, type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        n, k, matches, duplicate = args.child
        print(json.dumps(measure(n, k, matches, bool(duplicate), args.repeat)))
        return
    for n, k, matches, duplicate in CASES:
        child = [sys.executable, __file__, "--repeat", str(args.repeat), "--child"]
        out = subprocess.run(
            [*child, str(n), str(k), str(matches), str(int(duplicate))],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out)
        name = f"plan {n}x{k}x{matches}" + ("" if duplicate else " plain")
        print(
            f"{name}: {r['seconds']:.4f} s, {r['peak_mb']:.2f} MB tracemalloc peak, "
            f"{r['rss_mb']:.1f} MB max RSS growth ({r['matches']} matches)"
        )
        print(f"  spread: {r['spread']}")


if __name__ == "__main__":
    main()
