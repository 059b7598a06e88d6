"""Fixture bot: the seeded player of the golden replays (``scripts/regen_goldens.py``).

Its random stream per seat is ``random.Random(BASE * 10 + seat)``, BASE read from
``base_seed.txt`` beside this file (the golden match's seed), so that seat ``s`` plays
exactly as the golden file's ``seeded<s>`` did when it lives through the same calls.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from flipflop import Action, ActionKind, Bot, MatchInfo, MatchState, Observation, serve

BASE = int((Path(__file__).with_name("base_seed.txt")).read_text().strip() or "0")


class SeededBot(Bot):
    """Melds and lays off when it can, drops sometimes; a random stream per seat."""

    name = "seeded"
    version = "1.0.0"

    def __init__(self) -> None:
        self.rngs: dict[int, random.Random] = {}

    def start_match(self, info: MatchInfo) -> None:
        """This seat's stream, as the golden match seeded it."""
        self.rngs[info.seat] = random.Random(BASE * 10 + info.seat)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Now and then any legal start; else draw from the stock."""
        rng = self.rngs[obs.seat]
        return legal[rng.randrange(len(legal))] if rng.random() < 0.2 else legal[1]

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> list[Action]:
        """Every spread it can make or extend, then a random discard."""
        rng = self.rngs[obs.seat]
        state = MatchState.from_observation(obs, random.Random(0))
        steps: list[Action] = []
        seat = obs.seat
        while state.to_act == seat and not state.is_over and state.hand_number == obs.hand_number:
            options = state.legal_actions()
            spreads = [a for a in options if a.kind is not ActionKind.DISCARD]
            pick = spreads[0] if spreads else options[rng.randrange(len(options))]
            steps.append(pick)
            state.apply(pick)
        return steps


if __name__ == "__main__":
    serve(SeededBot)
