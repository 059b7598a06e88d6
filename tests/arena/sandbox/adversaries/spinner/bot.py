"""Adversary: burns CPU and never answers a decision.

On its first decision it runs two spinning child processes for 1.5 s, reports the CPU time
they got per second of wall time (a CPU quota of one CPU holds it near 1.0, even on a machine
with more cores) and answers, so that the arena's own CPU clock of that decision measures the
same 1.5 s from the host. Then it spins at every later decision and never answers: the runner
must time it out, forfeit its seat and finish the match anyway.
"""

from __future__ import annotations

import os

os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"  # before grpc is imported: plain forks

import json
import resource
import sys
import time
from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve

WALL_S = 1.5


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def spin(seconds: float) -> None:
    """Busy-loop for ``seconds`` of wall time."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def cpu_share() -> None:
    """Spin in two child processes at once; report CPU seconds per wall second."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                spin(WALL_S)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    report("cpu share", True, f"{cpu:.2f} CPU s in {wall:.2f} s", share=round(cpu / wall, 3))


class Spinner(Bot):
    """Never answers a decision."""

    name = "spinner"
    version = "1.0.0"
    measured = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Measure once, and answer; then spin forever."""
        if not self.measured:
            self.measured = True
            cpu_share()
            return super().start_turn(obs, legal)
        print("SPINNING", file=sys.stderr, flush=True)
        while True:
            pass

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Spin forever."""
        while True:
            pass


if __name__ == "__main__":
    serve(Spinner())
