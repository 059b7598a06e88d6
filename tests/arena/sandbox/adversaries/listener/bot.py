"""Adversary: reads a partner's hidden card from the time between its own turns.

It notes when it answered its last decision and when its next one arrived; a gap longer than
``THRESHOLD_S`` means the partner (``signaller``, same author) thought long, which it does when
its lowest card has an odd rank (issue 15, finding 7). Each start-of-turn decision's note says
the gap and what it read, so a test can score the channel against what was sent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve

THRESHOLD_S = 0.2
"""Half the signaller's slow answer: a turn of the other bots costs far less."""


class Listener(Bot):
    """Plays the default game; times the gap between its turns."""

    name = "listener"

    def __init__(self) -> None:
        self.last_answer: float | None = None

    def start_turn(  # type: ignore[override]  # a (answer, note) pair: see flipflop.serve
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Action, str]:
        """The default start; the note reads the gap since its last answer."""
        now = time.time()
        note = ""
        if self.last_answer is not None:
            gap = now - self.last_answer
            read = int(gap > THRESHOLD_S)
            note = json.dumps({"read": read, "from": self.last_answer, "to": now})
        return super().start_turn(obs, legal), note

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """The default play; remembers when it answered."""
        answer = super().play_turn(obs, legal)
        self.last_answer = time.time()
        return answer

    def hand_ended(self, result: object) -> None:
        """A new deal is next: its first gap would span the notice."""
        self.last_answer = None


if __name__ == "__main__":
    serve(Listener)
