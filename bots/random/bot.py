"""A bot that plays uniformly at random among the legal actions.

It is the floor of the ladder: any bot worth running should beat it. It is also the smallest
example of using the engine as a scratchpad: :meth:`RandomBot.play_turn` builds its plan by
applying steps to a copy of the hand rebuilt from the observation
(:meth:`flipflop.MatchState.from_observation`), asking it for the legal steps after each one.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from flipflop import Action, ActionKind, Bot, MatchInfo, MatchState, Observation


class RandomBot(Bot):
    """Uniformly random legal play, reproducible given the match id and seat.

    One random stream per seat, seeded in :meth:`start_match`; a seat seen without a
    ``start_match`` (a bot started mid-match) gets a stream seeded from its seat alone.
    """

    name = "random"
    version = "1.0.0"

    def __init__(self) -> None:
        self._rngs: dict[int, random.Random] = {}

    def start_match(self, info: MatchInfo) -> None:
        """Seed this seat's random stream from the match id and seat."""
        self._rngs[info.seat] = random.Random(f"random-bot:{info.match_id}:{info.seat}")

    def _rng(self, seat: int) -> random.Random:
        return self._rngs.setdefault(seat, random.Random(f"random-bot:{seat}"))

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Drop, draw from the stock or draw from the discard pile, at random."""
        return self._rng(obs.seat).choice(list(legal))

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Random legal steps until a discard (or an empty hand) ends the turn."""
        rng = self._rng(obs.seat)
        # Only this seat's hand and the table matter for which steps are legal, so any
        # determinization of the hidden cards will do.
        state = MatchState.from_observation(obs, rng)
        hand_number = state.hand_number
        plan: list[Action] = []
        while not state.is_over and state.hand_number == hand_number:
            step = rng.choice(state.legal_actions())
            plan.append(step)
            if step.kind is ActionKind.DISCARD:
                break
            state.apply(step)  # a meld or lay-off that empties the hand ends the play here
        return plan


if __name__ == "__main__":
    from flipflop import serve

    serve(RandomBot)  # the class: one instance per match, so no state is shared
