"""Fixture bot: passes the conformance check, then dies in the first match the arena runs.

The check's matches have ids ``conformance-…``; any other match is a real one, and there
the process exits abruptly at the bot's first decision.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from flipflop import Action, Bot, MatchInfo, Observation, serve


class MatchCrashBot(Bot):
    """The default game under the check; an abrupt exit in a real match."""

    name = "matchcrash"
    version = "1.0.0"
    real = False

    def start_match(self, info: MatchInfo) -> None:
        """Tell the check's matches from a real one by the match id."""
        self.real = not info.match_id.startswith("conformance-")

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Die in a real match; the default draw otherwise."""
        if self.real:
            print("CRASHING IN A REAL MATCH", file=sys.stderr, flush=True)
            os._exit(3)
        return super().start_turn(obs, legal)


if __name__ == "__main__":
    serve(MatchCrashBot)
