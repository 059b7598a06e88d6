"""Adversary: writes into its socket directory before binding its socket.

The socket directory is the one host directory a container sees, and it has to be writable
until the bot's socket exists. This bot uses that moment to write 64 files of 1 MB there (the
host's disk), reporting each, and only then serves.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from flipflop import Bot, serve


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def squat() -> None:
    """Write 1 MB files next to where the socket will be, until refused (at most 64)."""
    listen = os.environ["FLIPFLOP_LISTEN"]
    directory = Path(listen[len("unix:") :]).parent
    chunk = b"\x00" * (1024 * 1024)
    for i in range(64):
        try:
            (directory / f"junk-{i}").write_bytes(chunk)
        except OSError as e:
            report("socket directory", True, f"{type(e).__name__}: {e}", mb=i)
            return
        report("socket directory", False, "written", mb=i + 1)


class Squatter(Bot):
    """The default game, once it serves."""

    name = "squatter"
    version = "1.0.0"


if __name__ == "__main__":
    squat()
    serve(Squatter())
