"""Adversary: predicts the deal from what it is told, as a bot could on main.

At its first decision of hand 1 it tries every ladder seed 0..``tries``-1 with the arena's
public derivation of an explicit ``--seed`` (``deal_key_from_seed`` → ``match_seed`` for the
group its match id implies → the engine's deal) and checks whether the hand it would have
been dealt is the hand it holds. Where hand 1 ends before its first turn (an opponent drops
first: ``random`` often does), it guesses from its own hand as the result shows it
(R-HANDS-SHOWN), so that almost every match it plays gives it a guess, whatever the deal.
It reports ``ATTACK {"attack": "predict", ..., "via": "decision" or "shown"}`` and plays the
default game. Against a ladder dealt from a fresh secret key it must never be right.

It imports ``arena``, so it runs in the process sandbox only (the arena's interpreter).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from arena.match._deal import deal_key_from_seed, match_seed
from flipflop import Action, Bot, Card, HandResult, MatchInfo, MatchState, Observation, serve

CONFIG = json.loads((Path(__file__).resolve().parent / "attack.json").read_text())


class Predictor(Bot):
    """Plays the default game; guesses the deal at its first decision."""

    name = "predictor"

    def __init__(self) -> None:
        self.info: MatchInfo | None = None
        self.tried = False

    def start_match(self, info: MatchInfo) -> None:
        """Remember the match: its id, seat and rules are all it is told. One guess a match."""
        self.info = info
        self.tried = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Guess once, at the first decision of hand 1; then the default."""
        if not self.tried and obs.hand_number == 1 and self.info is not None:
            self.tried = True
            self.predict(obs.hand, via="decision")
        return super().start_turn(obs, legal)

    def hand_ended(self, result: HandResult) -> None:
        """Hand 1 over before its first turn: guess from its dealt hand, if shown."""
        if self.tried or result.hand_number != 1 or self.info is None:
            return
        shown = result.shown_hands[self.info.seat]
        if shown is not None and len(shown) == 5:  # as dealt (R-DEAL): it never drew
            self.tried = True
            self.predict(shown, via="shown")

    def predict(self, hand: Sequence[Card], via: str) -> None:
        """Try each public seed: would it have dealt ``hand``?"""
        info = self.info
        assert info is not None
        seats = info.config.seats
        group = int(info.match_id.removeprefix("m")) // seats  # duplicate deals: k per group
        held = set(hand)
        found = None
        for n in range(int(CONFIG.get("tries", 2000))):
            st = MatchState(info.config, match_seed(deal_key_from_seed(n), group))
            if set(st.hand_of(info.seat)) == held:
                found = n
                break
        report = {"attack": "predict", "hit": found is not None, "seed": found, "via": via}
        print("ATTACK " + json.dumps(report), file=sys.stderr, flush=True)


if __name__ == "__main__":
    serve(Predictor)
