"""Adversary: a fork bomb, bounded so that a test can never take the machine down.

On its first decision it forks sleeping children until the system refuses one (or it has
10 000), reports how many it got, and kills them. It also leaves one process that left its
process group and session (double fork + setsid) and sleeps for ten minutes: the sandbox must
kill that one too when it stops the bot. (gRPC's fork handlers are turned off first: they
would stall the bot when the system refuses threads as well as processes.)
"""

from __future__ import annotations

import os

os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"  # before grpc is imported

import json
import signal
import sys
import time
from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve

MAX_CHILDREN = 10_000


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def sleeper(seconds: float) -> None:
    """In a child: sleep, then leave without running any of the parent's cleanup."""
    try:
        time.sleep(seconds)
    finally:
        os._exit(0)


def bomb() -> None:
    """Fork until refused; report the count; kill them all."""
    children: list[int] = []
    error = ""
    try:
        while len(children) < MAX_CHILDREN:
            pid = os.fork()
            if pid == 0:
                sleeper(600)
            children.append(pid)
    except OSError as e:
        error = f"{type(e).__name__}: {e}"
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    for pid in children:
        os.waitpid(pid, 0)
    report("fork bomb", len(children) < MAX_CHILDREN, error, children=len(children))


def escape() -> None:
    """Leave a grandchild in a session of its own, out of the bot's process group."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                print(f"ESCAPED pid {os.getpid()}", file=sys.stderr, flush=True)
                sleeper(600)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


class ForkBomb(Bot):
    """Plays the default game after its attack on the first decision."""

    name = "forkbomb"
    version = "1.0.0"
    tried = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Attack once, then play the default."""
        if not self.tried:
            self.tried = True
            bomb()
            escape()
            print("ATTACKS DONE", file=sys.stderr, flush=True)
        return super().start_turn(obs, legal)


if __name__ == "__main__":
    serve(ForkBomb())
