"""Fixture bot: behaves whenever it thinks it is being validated, refuses every rated match.

The attack of issue 24, finding 1: a bot that passes its validation and then refuses
StartMatch in its rated matches makes each of them void. It reads every sign a validation
could give away in StartMatch: a match id not of the rated form ``m<number>``, opponents named
after the house bots or the conformance check's players, a short hand cap, or seat 0 of a
table of four (the old validation match's shape). Anything else it takes for a rated match,
and it refuses to play it.
"""

from __future__ import annotations

import re

from flipflop import Bot, MatchInfo, serve

_HOUSE = {"greedy", "counter", "random", "checked"}


def looks_rated(info: MatchInfo) -> bool:
    """Whether ``info`` looks like a rated league match, not a validation or a check."""
    others = [name for seat, name in enumerate(info.players) if seat != info.seat]
    if not re.fullmatch(r"m[0-9]+", info.match_id):
        return False
    if any(name in _HOUSE or name.startswith("random-") for name in others):
        return False
    if info.config.hand_cap is not None and info.config.hand_cap < 100:
        return False
    return not (info.seat == 0 and len(info.players) == 4)


class RatedRefuserBot(Bot):
    """The default game when watched; no game at all in a rated match."""

    name = "ratedrefuser"
    version = "1.0.0"

    def start_match(self, info: MatchInfo) -> None:
        """Refuse a match that looks rated."""
        if looks_rated(info):
            raise RuntimeError(f"REFUSING RATED MATCH {info.match_id}")


if __name__ == "__main__":
    serve(RatedRefuserBot)
