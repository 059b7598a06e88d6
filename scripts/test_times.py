"""Print the time the tests took per module, from pytest's JUnit XML reports, slowest first.

Usage: python scripts/test_times.py REPORT.xml [REPORT.xml ...] [--top N]

``.ci/run`` ends with this table, so whoever trims the run sees where its time goes. A
module's time is the sum of its tests' times (setup, call and teardown, as pytest reports
them); with pytest-xdist the tests of a module may run on several workers at once, so the
sum can exceed the wall time the module took.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def module_times(reports: list[Path]) -> dict[str, tuple[int, float]]:
    """Per module (its file), how many test cases the reports hold and their summed time."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            module = _module(case.get("classname", ""), case.get("file"))
            totals[module][0] += 1
            totals[module][1] += float(case.get("time") or 0.0)
    return {m: (int(n), t) for m, (n, t) in totals.items()}


def _module(classname: str, file: str | None) -> str:
    """A module's path from a test case's classname.

    ``tests/arena/league/api/test_api.py`` from ``tests.arena.league.api.test_api``.
    """
    if file:
        return file
    parts = classname.split(".")
    # A test class adds a part that starts with an upper-case letter: drop it.
    while parts and parts[-1][:1].isupper():
        parts.pop()
    return "/".join(parts) + ".py"


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit 2 when no report can be read."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=40, help="modules shown (default 40)")
    args = parser.parse_args(argv)
    readable = [r for r in args.reports if r.is_file()]
    if not readable:
        print(f"no JUnit report found: {', '.join(map(str, args.reports))}", file=sys.stderr)
        return 2
    times = module_times(readable)
    total = sum(t for _, t in times.values())
    cases = sum(n for n, _ in times.values())
    print(f"{'module':<60} {'tests':>6} {'s':>8} {'share':>6}")
    for module, (n, t) in sorted(times.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{module:<60} {n:>6} {t:>8.1f} {t / total if total else 0:>6.1%}")
    print(f"{'all ' + str(len(times)) + ' modules':<60} {cases:>6} {total:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
