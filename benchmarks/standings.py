"""Standings over a large results file: every record in memory against the streaming reader.

Run: ``python benchmarks/standings.py [--matches 100000] [--bots 50] [--seats 4]
[--no-trace]``.

Writes a ``matches.jsonl`` of realistic records (the shape ``arena run`` writes: seats,
faults, logs, replay paths) in a temporary directory: the given number of matches at tables
of ``--seats`` of ``--bots`` bots, finished slightly out of id order as with ``--jobs``, one
in a hundred void and played again. Then computes the standings two ways, each in a fresh
process so that neither's memory hides the other's:

- old: ``read_records`` (every record), the latest per match id, ``compute_standings``;
- stream: ``arena.ladder._records.tally_results`` (two passes over the file, a
  ``StandingsBuilder``).

Prints one line for each, starting ``standings old:`` and ``standings stream:``, with the
wall time, the peak of Python allocations (tracemalloc, in a second run of its own, since
tracing slows the work several times) and the process's peak resident set (ru_maxrss) above
what the interpreter and the imports already took; then whether both tables are equal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from arena.ladder._ladder import did_not_start, load_outcomes, read_records
from arena.ladder._records import tally_results
from arena.ladder._standings import BotStanding, compute_standings

_MB = 2**20


def _record(n: int, bots: list[str], attempt: int, void: bool) -> dict[str, Any]:
    """One match's record, as ``arena run`` writes it."""
    k = len(bots)
    match_id = f"m{n:06d}"
    hands = 5 + (n * 13) % 40
    places = [1 + (n * 5 + s * 3) % k for s in range(k)]
    chips = [100 * k - 10 * (n % 7) if p == 1 else (10 * (n % 7) if p == 2 else 0) for p in places]
    return {
        "match_id": match_id,
        "group": n // k,
        "attempt": attempt,
        "status": "void" if void else "ok",
        "bots": bots,
        "placements": places,
        "bankrolls": chips,
        "start_bankroll": 100,
        "hands": hands,
        "by_cap": hands >= 40,
        "decisions": 9 * hands,
        "seconds": 0.3000608249999459,
        "seats": [
            {
                "seat": s,
                "bot": bot,
                "version": "1.0.0",
                "started": not (void and s == 0),
                "decisions": 3 * hands,
                "think_ms": 42.493,
                "strikes": 0,
                "forfeited": void and s == 0,
                "log": f"/home/me/arena-out/run-20260101-120000/logs/{match_id}/seat{s}-{bot}.log",
                "dropped_log_bytes": 0,
            }
            for s, bot in enumerate(bots)
        ],
        "faults": [
            {
                "seat": 0,
                "bot": bots[0],
                "kind": "start",
                "hand": 0,
                "detail": "exited with code 1 while starting",
                "forfeited": True,
            }
        ]
        if void
        else [],
        "replay": f"/home/me/arena-out/run-20260101-120000/replays/{match_id}.jsonl",
    }


def write_results(path: Path, matches: int, bots: int, seats: int) -> None:
    """A results file of ``matches`` matches, in a plausible completion order."""
    names = [f"bot{i:03d}" for i in range(bots)]
    with open(path, "w", encoding="utf-8") as f:
        for block in range(0, matches, 2):
            # two jobs: each pair of matches finishes in either order
            pair = [n for n in (block + 1, block) if n < matches]
            for n in pair if block % 4 else reversed(pair):
                table = [names[(n * 7 + s * (bots // seats + 1)) % bots] for s in range(seats)]
                if n % 100 == 99:  # void, then played once more
                    f.write(json.dumps(_record(n, table, 1, void=True)) + "\n")
                    f.write(json.dumps(_record(n, table, 2, void=False)) + "\n")
                else:
                    f.write(json.dumps(_record(n, table, 1, void=False)) + "\n")


def _old(path: Path) -> list[BotStanding]:
    latest = {r["match_id"]: r for r in read_records(path)}
    records = sorted(latest.values(), key=lambda r: r["match_id"])
    return compute_standings(load_outcomes(records), did_not_start=did_not_start(records))


def _stream(path: Path) -> list[BotStanding]:
    return list(tally_results(path).standings)


def _child(way: str, path: Path, trace: bool) -> None:
    """Measure one way in this (fresh) process; print the figures as JSON."""
    fn = {"old": _old, "stream": _stream}[way]
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    rows = fn(path)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    max_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    digest = hashlib.sha256(repr(rows).encode()).hexdigest()
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak": peak,
                "rss": max_kb * 1024,
                "rss_base": base_kb * 1024,
                "rows": len(rows),
                "digest": digest,
            }
        )
    )


def _measure(way: str, path: Path, trace: bool) -> dict[str, Any]:
    args = [sys.executable, __file__, "--child", way, str(path)] + (["--trace"] if trace else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def main() -> None:
    """Write the file, measure both ways, print the lines."""
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--matches", type=int, default=100_000)
    p.add_argument("--bots", type=int, default=50)
    p.add_argument("--seats", type=int, default=4)
    p.add_argument("--no-trace", action="store_true", help="skip the (slow) tracemalloc runs")
    p.add_argument("--child", nargs=2, metavar=("WAY", "FILE"), help=argparse.SUPPRESS)
    p.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        _child(a.child[0], Path(a.child[1]), a.trace)
        return
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "matches.jsonl"
        write_results(path, a.matches, a.bots, a.seats)
        size = path.stat().st_size
        print(
            f"{a.matches} matches, {a.bots} bots at {a.seats} seats: "
            f"matches.jsonl {size / _MB:.1f} MB",
            flush=True,
        )
        digests = set()
        for way in ("old", "stream"):
            print(f"measuring {way} …", file=sys.stderr, flush=True)
            plain = _measure(way, path, trace=False)
            traced = _measure(way, path, trace=True) if not a.no_trace else None
            digests.add(plain["digest"])
            peak = f"{traced['peak'] / _MB:.1f} MB" if traced else "not measured"
            print(
                f"standings {way}: {plain['seconds']:.1f} s, tracemalloc peak {peak}, "
                f"max RSS {plain['rss'] / _MB:.0f} MB "
                f"(+{(plain['rss'] - plain['rss_base']) / _MB:.0f} MB over the "
                f"{plain['rss_base'] / _MB:.0f} MB of the interpreter and imports), "
                f"{plain['rows']} rows",
                flush=True,
            )
        print(f"same standings: {'yes' if len(digests) == 1 else 'NO'}")


if __name__ == "__main__":
    main()
