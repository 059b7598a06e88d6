"""A league-shaped ladder in Docker, with and without starts hidden behind play.

Run: ``python benchmarks/prestart.py [--bots 64] [--matches 64] [--seats 4] [--hand-cap 20]
[--runtime runsc|runc|process] [--jobs 2] [--rounds 1]``.

A plan shaped like a league's: many bots (copies of ``random``, ``greedy`` and ``counter``
under their own names, sharing three images), each in one duplicate group, so that every
seat needs a new instance (an instance never plays two rotations of one deck): 64 bots in
64 matches of 4 seats start 256 containers. It is played with ``prestart=False`` (each match
starts its bots when it begins) and with ``prestart=True`` (``arena.match._prestart``: a slot
starts the next match's bots while it plays its own), alternating, ``--rounds`` times each,
on one warm sandbox per round (images built before the first). Both play the same matches
(the placements are compared). The machine's busy share (every core, ``/proc/stat``) says
whether there was idle CPU for the starts to hide in: a start under gVisor costs CPU as
well as time. "Outside play" is each slot's time not spent in a match's hands (its starts,
waiting for them, bookkeeping), per match: the start time a match still shows.

Prints, for scripts::

    prestart off: N matches/min (S starts, 0 ahead), T s, O s a match outside play, machine B % busy
    prestart on: N matches/min (S starts, P ahead), T s, O s a match outside play, machine B % busy
    prestart on/off: R (matches per minute, best round of each)
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path

from arena.ladder._bundled import resolve_bot
from arena.ladder._ladder import LadderResult, LadderSpec, run_ladder
from arena.match._runner import TimeControl
from arena.sandbox import ProcessSandbox, Sandbox
from arena.sandbox._docker import DockerSandbox, docker_available


def machine_busy() -> tuple[int, int]:
    """The machine's busy and total CPU ticks so far, every core (``/proc/stat``)."""
    with open("/proc/stat", encoding="ascii") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return sum(ticks) - idle, sum(ticks)


def play(
    spec: LadderSpec, runtime: str, jobs: int, prestart: bool, out: Path
) -> tuple[float, float, LadderResult]:
    """Play ``spec`` on a new sandbox: its wall seconds, the machine's busy share, the result."""
    box: Sandbox = ProcessSandbox()
    if runtime != "process":
        box = DockerSandbox(runtime=runtime, log=lambda message: None)
        box.prepare(spec.bots)  # found by content: no build inside the timing
    try:
        busy0, total0 = machine_busy()
        began = time.perf_counter()
        result = run_ladder(spec, out, sandbox=box, jobs=jobs, prestart=prestart)
        seconds = time.perf_counter() - began
        busy1, total1 = machine_busy()
        return seconds, (busy1 - busy0) / max(1, total1 - total0), result
    finally:
        box.close()


def main() -> None:
    """Play the plan both ways and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=64, help="bots (64)")
    parser.add_argument("--matches", type=int, default=64, help="matches (64)")
    parser.add_argument("--seats", type=int, default=4, help="table size (4)")
    parser.add_argument("--hand-cap", type=int, default=20, help="hands per match at most (20)")
    parser.add_argument(
        "--runtime",
        default="runsc",
        help="Docker runtime (runsc: gVisor; runc), or process: the process sandbox",
    )
    parser.add_argument("--jobs", type=int, default=2, help="matches at once (2)")
    parser.add_argument("--rounds", type=int, default=1, help="plays of each way (1)")
    args = parser.parse_args()
    why = None if args.runtime == "process" else docker_available()
    if why is not None:
        sys.exit(f"prestart: {why}")
    kinds = ("random", "greedy", "counter")
    bots = tuple(
        dataclasses.replace(resolve_bot(kinds[i % 3]), name=f"bot{i:02d}") for i in range(args.bots)
    )
    spec = LadderSpec(
        bots=bots,
        matches=args.matches,
        table_size=args.seats,
        seed=7,
        hand_cap=args.hand_cap,
        clock=TimeControl(decision_ms=5000, notify_ms=15_000),
    )
    scratch = Path(tempfile.mkdtemp(prefix="ffa-prestart-"))
    best: dict[bool, float] = {}
    placements: dict[bool, list[object]] = {}
    try:
        for r in range(args.rounds):
            for prestart in (False, True):
                out = scratch / f"{r}-{int(prestart)}"
                seconds, busy, result = play(spec, args.runtime, args.jobs, prestart, out)
                ok = result.count("ok")
                rate = ok / seconds * 60
                # A slot's time not spent in a match's hands: its bots' starts, what waits
                # for them, and the arena's bookkeeping (a record's seconds are its play).
                played = sum(float(rec["seconds"]) for rec in result.records())
                outside = (seconds * args.jobs - played) / max(1, ok)
                best[prestart] = max(best.get(prestart, 0.0), rate)
                placements[prestart] = [rec["placements"] for rec in result.records()]
                print(
                    f"prestart {'on' if prestart else 'off'}: {rate:.1f} matches/min "
                    f"({result.starts} starts, {result.prestarted} ahead), {seconds:.1f} s, "
                    f"{outside:.2f} s a match outside play, machine {busy:.0%} busy"
                    + ("" if ok == result.planned else f"; only {ok} of {result.planned} ok"),
                    flush=True,
                )
        same = placements[False] == placements[True]
        print(
            f"prestart on/off: {best[True] / best[False]:.2f} (matches per minute, best round "
            f"of each; same placements: {'yes' if same else 'NO'})"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
