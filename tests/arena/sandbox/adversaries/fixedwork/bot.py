"""Helper: does a fixed amount of CPU work at every decision, then plays the default.

A busy loop of ``ITERATIONS`` steps (80-205 ms of one idle CPU, by machine; ``work.json``
next to this file may set ``{"iterations": N}``), the same at every decision: what it costs in
CPU time does not depend on what else runs on the machine, what it takes in wall time does.
The CPU clock is tested (and measured, ``benchmarks/cpu_clock.py``) with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from flipflop import Action, Bot, Observation, serve

ITERATIONS = 1_500_000


def iterations() -> int:
    """``ITERATIONS``, or what ``work.json`` says."""
    path = Path(__file__).with_name("work.json")
    if path.is_file():
        return int(json.loads(path.read_text(encoding="utf-8"))["iterations"])
    return ITERATIONS


def work(n: int) -> int:
    """A busy loop of ``n`` steps (its result, so that it is not optimised away)."""
    total = 0
    for i in range(n):
        total = (total + i * i) & 0xFFFF
    return total


class FixedWork(Bot):
    """The same work at every decision."""

    name = "fixedwork"
    version = "1.0.0"
    steps = iterations()

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Work, then draw as the default bot does."""
        work(self.steps)
        return super().start_turn(obs, legal)

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Work, then play as the default bot does."""
        work(self.steps)
        return super().play_turn(obs, legal)


if __name__ == "__main__":
    serve(FixedWork())
