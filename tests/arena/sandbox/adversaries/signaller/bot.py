"""Adversary: signals one bit of its hidden hand to a partner at the table through timing.

At the start of each turn it looks at its lowest card: odd rank, it thinks for
``SLOW_S`` seconds before answering; even rank, it answers at once. A bot of the same author
(``listener``) at the same table times the gap between its own turns and reads the bit (issue
15, finding 7). Each decision's note says what was sent and when (wall clock), so a test can
check what the partner read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from flipflop import Action, Bot, Observation, serve

SLOW_S = 0.4
"""How long it thinks to send a 1: well above what a turn costs on a loaded machine."""


class Signaller(Bot):
    """Plays the default game; encodes the parity of its lowest rank in its thinking time."""

    name = "signaller"

    def start_turn(  # type: ignore[override]  # a (answer, note) pair: see flipflop.serve
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Action, str]:
        """The default start, after a pause that says the lowest rank's parity."""
        t0 = time.time()
        bit = min(int(c.rank) for c in obs.hand) % 2 if obs.hand else 0
        if bit:
            time.sleep(SLOW_S)
        note = json.dumps({"sent": bit, "t0": t0, "t1": time.time()})
        return super().start_turn(obs, legal), note


if __name__ == "__main__":
    serve(Signaller)
