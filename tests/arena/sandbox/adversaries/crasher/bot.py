"""Adversary: plays two decisions, then its process dies in the middle of the third."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve


class Crasher(Bot):
    """The default game, until it exits abruptly at its third decision."""

    name = "crasher"
    version = "1.0.0"
    decisions = 0

    def _count(self) -> None:
        self.decisions += 1
        if self.decisions == 3:
            print("CRASHING NOW", file=sys.stderr, flush=True)
            os._exit(3)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Count; the default draw."""
        self._count()
        return super().start_turn(obs, legal)

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Count; the default discard."""
        self._count()
        return super().play_turn(obs, legal)


if __name__ == "__main__":
    serve(Crasher())
