"""Fixture bot: draws, then answers every play phase with an empty plan, which ends no turn."""

from __future__ import annotations

from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve


class IllegalBot(Bot):
    """A plan must end the turn (a discard or going out); this one never does."""

    name = "illegal"
    version = "1.0.0"

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Nothing: the turn is left open."""
        return []


if __name__ == "__main__":
    serve(IllegalBot)
