"""Adversary: a noisy neighbour that spins on every core it can, from the moment it starts.

Before it serves, it starts one spinning thread per CPU the machine has (its CPU quota holds
it to ``limits.cpus`` of them; several hogs saturate every core), then plays the default game.
Next to it, a bot's wall time per decision grows; the CPU time it is charged must not.
"""

from __future__ import annotations

import os
import threading

from flipflop import Bot, serve


def spin() -> None:
    """Burn CPU for ever."""
    x = 0
    while True:
        x = (x + 1) & 0xFFFF


class Hog(Bot):
    """The default game, with spinning threads behind it."""

    name = "hog"
    version = "1.0.0"


if __name__ == "__main__":
    for _ in range(os.cpu_count() or 1):
        threading.Thread(target=spin, daemon=True).start()
    serve(Hog())
