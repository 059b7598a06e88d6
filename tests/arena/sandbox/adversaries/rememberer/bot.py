"""Adversary: one process, many matches; it remembers every deal and looks for a repeat.

A bot kept up across matches (``arena.match._hosts``) may remember them. The duplicate rotations of
a group share their decks, so a process that played one rotation would know the cards of
the next. This bot keeps, per match it has played on this process, each hand's flip card
(public, told at every hand's end, and the same in every rotation of a group while the same
seats are active), and once a match's hands 1 and 2 show the flip cards of an earlier match
it claims to have recognised that deal. Every decision's note is a JSON object: ``pid`` (its
process), ``n`` (matches that process has started), ``match`` and ``recognised`` (the
earlier match it recognised, "" for none). It plays the default game.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from flipflop import Action, Bot, HandResult, MatchInfo, Observation, serve


class Rememberer(Bot):
    """The default game; a memory of every deal this process was shown."""

    name = "rememberer"
    version = "1.0.0"

    def __init__(self) -> None:
        self.flips: dict[str, dict[int, int]] = {}
        self.match = ""
        self.started = 0

    def start_match(self, info: MatchInfo) -> None:
        """A new match on this process: count it, start its page of the memory."""
        self.started += 1
        self.match = info.match_id
        self.flips[self.match] = {}

    def hand_ended(self, result: HandResult) -> None:
        """Every hand's flip card is told to every seat at its end."""
        self.flips[self.match][result.hand_number] = result.flip_card.index

    def _note(self, obs: Observation) -> str:
        seen = self.flips[self.match]
        seen[obs.hand_number] = obs.flip_card.index
        recognised = ""
        if 1 in seen and 2 in seen:
            for earlier, flips in self.flips.items():
                if earlier != self.match and all(flips.get(h) == seen[h] for h in (1, 2)):
                    recognised = earlier
        return json.dumps(
            {"pid": os.getpid(), "n": self.started, "match": self.match, "recognised": recognised}
        )

    def start_turn(  # type: ignore[override]  # a (answer, note) pair: see flipflop.serve
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Action, str]:
        """The default draw, with the note."""
        return super().start_turn(obs, legal), self._note(obs)

    def play_turn(  # type: ignore[override]
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Sequence[Action], str]:
        """The default discard, with the note."""
        return super().play_turn(obs, legal), self._note(obs)


if __name__ == "__main__":
    serve(Rememberer())
