"""Adversary: floods its output while it plays.

From the start, a thread writes 64 MB, half to stdout and half to stderr, in 64 KB lines; the
bot meanwhile plays the default game. The arena must keep only its log cap, count the rest,
and neither block the bot nor fill the disk.
"""

from __future__ import annotations

import sys
import threading

from flipflop import Bot, serve

TOTAL = 64 * 1024 * 1024
LINE = b"x" * (64 * 1024 - 1) + b"\n"


def flood() -> None:
    """Write TOTAL bytes, alternating stdout and stderr."""
    written = 0
    streams = (sys.stdout.buffer, sys.stderr.buffer)
    while written < TOTAL:
        out = streams[(written // len(LINE)) % 2]
        out.write(LINE)
        out.flush()
        written += len(LINE)
    print("FLOOD DONE", file=sys.stderr, flush=True)


class Flood(Bot):
    """The default game."""

    name = "flood"
    version = "1.0.0"


if __name__ == "__main__":
    threading.Thread(target=flood, daemon=True).start()
    serve(Flood())
