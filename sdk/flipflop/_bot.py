"""The :class:`Bot` base class: what a bot author subclasses.

A turn is two decisions, mirroring the rules (R-DROP, R-DRAW, R-MELD, R-DISCARD):

1. :meth:`Bot.start_turn` — drop, draw from the stock or draw from the discard pile;
2. :meth:`Bot.play_turn` — the melds and lay-offs to make, in order, then the discard.

Every other method has a default, so a minimal bot is a few lines::

    from flipflop import Bot, serve

    class Lowball(Bot):
        name = "lowball"

        def play_turn(self, obs, legal):
            return [max(self.discards(legal), key=lambda a: a.cards[0].value)]

    if __name__ == "__main__":
        serve(Lowball)   # the class: every match gets its own instance

A decision may carry a debug note, kept in the replay next to the action: return
``(action, "note")`` from :meth:`Bot.start_turn` or ``(steps, "note")`` from
:meth:`Bot.play_turn`. Notes are cut to 1024 bytes of UTF-8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flipflop._actions import DRAW_STOCK, Action, ActionKind
from flipflop._match import MatchConfig
from flipflop._observation import Observation
from flipflop._results import HandResult, MatchResult

__all__ = ["Bot", "MatchInfo"]


@dataclass(frozen=True, slots=True)
class MatchInfo:
    """What a bot is told when a match starts.

    Attributes:
        match_id: unique per match; one bot process may play several matches at once.
        seat: this bot's seat.
        players: a display name per seat.
        config: the match's rules parameters.
        decision_ms: the deadline for one decision, in milliseconds.
        time_bank_ms: extra time for the whole match, drawn on when a decision runs late.
    """

    match_id: str
    seat: int
    players: tuple[str, ...]
    config: MatchConfig
    decision_ms: int
    time_bank_ms: int


def split_note(answer: object) -> tuple[object, str]:
    """Split a bot's answer into (answer, note): ``(x, "note")`` is a note; else none."""
    if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[1], str):
        return answer[0], answer[1]
    return answer, ""


class Bot:
    """Base class for a Game, Flip, Flop bot. Override what you need.

    The defaults play a legal, simple game: always draw from the stock, make no melds,
    discard the highest-value card allowed. Served as a class (``serve(MyBot)``) every match
    gets its own instance, so per-match state can live on ``self``; a shared instance
    (``serve(MyBot())``) sees every match's calls, possibly from several threads at once.

    Attributes:
        name: shown in standings.
        version: shown in standings and replays.
    """

    name: str = "bot"
    version: str = "0.1.0"

    def start_match(self, info: MatchInfo) -> None:
        """Called once when a match starts."""

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Choose how the turn starts: ``DROP``, ``DRAW_STOCK`` or ``DRAW_DISCARD``."""
        return DRAW_STOCK

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Choose the rest of the turn after drawing.

        Return the steps in order: melds and lay-offs, then a discard (none if the hand is
        empty by then).
        ``legal`` lists the actions allowed as the FIRST step; later steps are checked as
        they are applied. Lay-off targets index ``obs.spreads``; a spread melded earlier in
        this same turn gets the next index.
        """
        return [max(self.discards(legal), key=_discard_value)]

    def hand_ended(self, result: HandResult) -> None:
        """Called after every hand with its settlement and the hands shown."""

    def end_match(self, result: MatchResult) -> None:
        """Called once when the match is over."""

    @staticmethod
    def discards(legal: Sequence[Action]) -> list[Action]:
        """The discard actions among ``legal``."""
        return [a for a in legal if a.kind is ActionKind.DISCARD]


def _discard_value(a: Action) -> tuple[int, int]:
    return (a.cards[0].value, a.cards[0].index)
