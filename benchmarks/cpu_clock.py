"""The CPU clock: what a fixed-work bot is charged alone, next to CPU hogs, next to a flooder.

Run: ``python benchmarks/cpu_clock.py [--sandbox process|docker|both] [--rounds R]
[--hand-cap H] [--hogs N]``.

The ``fixedwork`` helper (tests/arena/sandbox/adversaries) does the same CPU work at every
decision. It plays real matches (``run_match``; seats: fixedwork, greedy, random) in three
settings, rounds alternating so that drift in the machine's load hits each alike:

- ``alone``: nothing else started;
- ``hog``: ``--hogs`` ``hog`` bots (default: one per core) spinning in the same sandbox;
- ``flood``: a ``flood`` bot writing 64 MB to its output, started again every second.

For each, the mean per decision of fixedwork's wall time (``think_ms``, what the wall clock
charged) and of its CPU time (``cpu_ms``, what the CPU clock charges), and each as a ratio to
``alone``: the target is a CPU ratio within 1.1 (issue 15, finding 6). Needs root and cgroups
for the process sandbox's CPU time, a Docker engine for the other.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from arena.match._runner import TimeControl, run_match
from arena.sandbox import ProcessSandbox, RunningBot, Sandbox
from arena.sandbox._docker import DockerSandbox
from flipflop import MatchConfig, read_manifest

REPO = Path(__file__).resolve().parent.parent
ADVERSARIES = REPO / "tests" / "arena" / "sandbox" / "adversaries"
CLOCK = TimeControl(decision_ms=10_000, time_bank_ms=60_000, notify_ms=10_000)
SETTINGS = ("alone", "hog", "flood")


@contextmanager
def neighbours(box: Sandbox, setting: str, scratch: Path, hogs: int) -> Iterator[None]:
    """Start the setting's neighbours in ``box``; stop them after."""
    started: list[RunningBot] = []
    stop = threading.Event()
    flooder: threading.Thread | None = None
    if setting == "hog":
        hog = read_manifest(ADVERSARIES / "hog")
        started += [box.start(hog, scratch / f"hog{i}", f"hog{i}") for i in range(hogs)]
        time.sleep(2.0)
    elif setting == "flood":
        flood = read_manifest(ADVERSARIES / "flood")

        def keep_flooding() -> None:
            n = 0
            while not stop.is_set():
                bot = box.start(flood, scratch / f"flood{n % 2}", f"flood{n}")
                stop.wait(1.0)
                bot.stop()
                n += 1

        flooder = threading.Thread(target=keep_flooding, daemon=True)
        flooder.start()
        time.sleep(1.0)
    try:
        yield
    finally:
        stop.set()
        if flooder is not None:
            flooder.join()
        for bot in started:
            bot.stop()


def one_match(box: Sandbox, scratch: Path, seed: int, hand_cap: int) -> tuple[float, float]:
    """The mean (wall ms, CPU ms) per decision of fixedwork in one match."""
    bots = [read_manifest(ADVERSARIES / "fixedwork")]
    bots += [read_manifest(REPO / "bots" / n) for n in ("greedy", "random")]
    shutil.rmtree(scratch / "w", ignore_errors=True)
    rec = run_match(
        f"m{seed:05d}",
        seed,
        bots,
        MatchConfig(seats=3, hand_cap=hand_cap),
        sandbox=box,
        workdir=scratch / "w",
        replay_path=scratch / "replay.jsonl",
        logs_dir=scratch / "logs",
        clock=CLOCK,
    )
    seat = rec.seats[0]
    if rec.faults or seat.cpu_ms is None:
        raise SystemExit(f"unexpected: faults {rec.faults}, cpu_ms {seat.cpu_ms}")
    return seat.think_ms / seat.decisions, seat.cpu_ms / seat.decisions


def measure(make: Callable[[], Sandbox], rounds: int, hand_cap: int, hogs: int) -> None:
    """Print the table of one sandbox."""
    box = make()
    scratch = Path(tempfile.mkdtemp(prefix="ffa-b-"))
    walls: dict[str, list[float]] = {s: [] for s in SETTINGS}
    cpus: dict[str, list[float]] = {s: [] for s in SETTINGS}
    try:
        if isinstance(box, DockerSandbox):
            box.prepare([read_manifest(ADVERSARIES / n) for n in ("fixedwork", "hog", "flood")])
            box.prepare([read_manifest(REPO / "bots" / n) for n in ("greedy", "random")])
        for r in range(rounds):
            for setting in SETTINGS:
                with neighbours(box, setting, scratch, hogs):
                    wall, cpu = one_match(box, scratch, 100 + r, hand_cap)
                walls[setting].append(wall)
                cpus[setting].append(cpu)
    finally:
        box.close()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{box.kind.value} sandbox, {rounds} rounds, {os.cpu_count()} CPUs, {hogs} hogs")
    print(f"{'':8} {'wall ms':>9} {'cpu ms':>9} {'wall/alone':>11} {'cpu/alone':>10}")
    base_w = statistics.mean(walls["alone"])
    base_c = statistics.mean(cpus["alone"])
    for setting in SETTINGS:
        w, c = statistics.mean(walls[setting]), statistics.mean(cpus[setting])
        print(f"{setting:8} {w:9.1f} {c:9.1f} {w / base_w:11.2f} {c / base_c:10.2f}")


def main() -> None:
    """Parse the options and measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", choices=("process", "docker", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hand-cap", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if args.sandbox in ("process", "both"):
        measure(ProcessSandbox, args.rounds, args.hand_cap, args.hogs)
    if args.sandbox in ("docker", "both"):
        measure(
            lambda: DockerSandbox(log=lambda message: None), args.rounds, args.hand_cap, args.hogs
        )


if __name__ == "__main__":
    main()
