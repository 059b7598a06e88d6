"""A bot that counts the matches its process plays, for the tests of kept bots.

Every decision's note is ``{"pid": …, "n": …}``: its process and how many matches that
process has started. ``attack.json`` (optional) may ask it to ``crash_in_match`` K (exit in
the middle of its K-th match on a process, at that match's second decision) or to
``burn_cpu_s`` S (spin S CPU seconds at the start of every match). It plays the default game.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from flipflop import Action, Bot, MatchInfo, Observation, serve

_ATTACK = Path(__file__).resolve().parent / "attack.json"
CONFIG = json.loads(_ATTACK.read_text()) if _ATTACK.exists() else {}


class Stayer(Bot):
    """The default game, counting matches per process."""

    name = "stayer"
    version = "1.0.0"

    def __init__(self) -> None:
        self.started = 0
        self.decisions = 0

    def start_match(self, info: MatchInfo) -> None:
        """Count the match; burn CPU if asked to."""
        self.started += 1
        self.decisions = 0
        print(f"match {self.started} on pid {os.getpid()}: {info.match_id}", flush=True)
        burn = float(CONFIG.get("burn_cpu_s", 0))
        if burn:
            until = time.process_time() + burn
            while time.process_time() < until:
                pass

    def _note(self) -> str:
        self.decisions += 1
        if self.started == CONFIG.get("crash_in_match") and self.decisions == 2:
            print("CRASHING NOW", file=sys.stderr, flush=True)
            os._exit(3)
        return json.dumps({"pid": os.getpid(), "n": self.started})

    def start_turn(  # type: ignore[override]  # a (answer, note) pair: see flipflop.serve
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Action, str]:
        """The default draw, with the note."""
        return super().start_turn(obs, legal), self._note()

    def play_turn(  # type: ignore[override]
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Sequence[Action], str]:
        """The default discard, with the note."""
        return super().play_turn(obs, legal), self._note()


if __name__ == "__main__":
    serve(Stayer())
