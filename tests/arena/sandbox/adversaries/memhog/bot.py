"""Adversary: allocates (and touches) memory until refused or killed, at most 4 GB.

On its first decision it grabs 32 MB at a time and reports how much it holds after each step,
so the last report says how far it got before the sandbox stopped it: a ``MemoryError`` (an
address-space limit) or the kernel's OOM killer (a memory cgroup).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve

STEP_MB = 32
MAX_MB = 4096


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def hog() -> None:
    """Hold ever more memory; report each step, then what stopped it."""
    held: list[bytes] = []
    try:
        while len(held) * STEP_MB < MAX_MB:
            held.append(b"\x01" * (STEP_MB * 1024 * 1024))  # written: resident, not reserved
            report("memory", False, "holding", mb=len(held) * STEP_MB)
    except MemoryError as e:
        report("memory", True, f"MemoryError: {e}", mb=len(held) * STEP_MB)
    else:
        report("memory", False, "reached the adversary's own cap", mb=len(held) * STEP_MB)
    held.clear()


class MemHog(Bot):
    """Plays the default game after its attack on the first decision."""

    name = "memhog"
    version = "1.0.0"
    tried = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Attack once, then play the default."""
        if not self.tried:
            self.tried = True
            hog()
        return super().start_turn(obs, legal)


if __name__ == "__main__":
    serve(MemHog())
