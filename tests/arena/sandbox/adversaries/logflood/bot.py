"""Adversary: floods its output for as long as it runs, while it plays the default game.

From its first match on (unlike ``flood``: 64 MB, then quiet), a thread writes 64 KB lines to
stdout and stderr without end: every byte is work for the arena (its log pump; under Docker
also the daemon and the container's shim) that no quota of the bot's pays for. The arena must
cut it off: stop it and record a fault. It stops itself after ``limit_mb`` (attack.json,
default 4096), so that a sandbox that does not hold cannot flood for ever.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from flipflop import Bot, MatchInfo, serve

ATTACK = json.loads((Path(__file__).parent / "attack.json").read_text() or "{}")
LIMIT = int(ATTACK.get("limit_mb", 4096)) * 1024 * 1024
LINE = b"x" * (64 * 1024 - 1) + b"\n"


def flood() -> None:
    """Write up to LIMIT bytes, alternating stdout and stderr."""
    written = 0
    streams = (sys.stdout.buffer, sys.stderr.buffer)
    while written < LIMIT:
        out = streams[(written // len(LINE)) % 2]
        out.write(LINE)
        out.flush()
        written += len(LINE)
    print(f"FLOOD NOT STOPPED after {written} bytes", file=sys.stderr, flush=True)


class LogFlood(Bot):
    """The default game; the flood starts with the first match."""

    name = "logflood"
    version = "1.0.0"
    flooding = False

    def start_match(self, info: MatchInfo) -> None:
        """Start flooding (once)."""
        if not LogFlood.flooding:
            LogFlood.flooding = True
            threading.Thread(target=flood, daemon=True).start()


if __name__ == "__main__":
    serve(LogFlood())
