"""Fixture bot: plays the default game until it is armed, then refuses every match it is given.

A bot no validation can tell from an honest one (a time bomb, a bug that waits for some
date): whatever the validation looks like, it passes, and then its matches go void. The test
arms it by creating the file named in ``ARM`` beside this script (the process sandbox lets a
bot read the host's files: it is a stand-in for a clock).
"""

from __future__ import annotations

from pathlib import Path

from flipflop import Bot, MatchInfo, serve

_ARM = Path(__file__).with_name("ARM")


class SleeperBot(Bot):
    """The default game; once armed, StartMatch fails."""

    name = "sleeper"
    version = "1.0.0"

    def start_match(self, info: MatchInfo) -> None:
        """Refuse the match once the file ``ARM`` names exists."""
        armed = _ARM.is_file() and Path(_ARM.read_text(encoding="utf-8").strip()).exists()
        if armed:
            raise RuntimeError(f"ARMED: REFUSING MATCH {info.match_id}")


if __name__ == "__main__":
    serve(SleeperBot)
