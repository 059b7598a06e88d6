"""Adversary: plays the default game as slowly as the rules allow.

Every decision is answered ``margin_ms`` (attack.json, default 100) before its deadline, so it
never draws on its time bank and no single decision is late: without a cap on the whole match,
every match it sits in lasts its number of decisions times the deadline, and no fault is ever
recorded. Each decision it says how long it has held the match so far.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from flipflop import Action, Bot, MatchInfo, Observation, serve

ATTACK = json.loads((Path(__file__).parent / "attack.json").read_text() or "{}")
MARGIN_S = int(ATTACK.get("margin_ms", 100)) / 1000


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


class SlowPlay(Bot):
    """The default game, each decision just in time."""

    name = "slowplay"
    version = "1.0.0"

    def start_match(self, info: MatchInfo) -> None:
        """Learn the deadline."""
        self.delay = max(0.0, info.decision_ms / 1000 - MARGIN_S)
        self.held = 0.0

    def _stall(self) -> None:
        time.sleep(self.delay)
        self.held += self.delay
        report("slow play", False, "answered just in time", held_s=round(self.held, 2))

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Draw from the stock, just in time."""
        self._stall()
        return super().start_turn(obs, legal)

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Discard the highest card, just in time."""
        self._stall()
        return super().play_turn(obs, legal)


if __name__ == "__main__":
    serve(SlowPlay)
