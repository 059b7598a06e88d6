"""Adversary: steals CPU from its opponents with children that escape its process group.

Before it serves, it forks ``spinners`` children (4 unless ``attack.json`` says otherwise),
each of which leaves the bot's process group and session with ``setsid`` and spins forever.
Then it plays a legal game (the SDK's default: draw from the stock, discard the highest card).
Without a CPU quota shared by all of a bot's processes, the spinners take every idle core
from the bots that are thinking; with one, they only slow this bot's own answers.

It reports ``ATTACK {"attack": "spinners", "pids": [...]}`` on stderr.
"""

from __future__ import annotations

import os

os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"  # before grpc is imported: plain forks

import json
import sys
from pathlib import Path

from flipflop import Bot, serve

SPINNERS = 4


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def spinners(n: int) -> list[int]:
    """Fork ``n`` children, each in a session of its own, spinning until killed."""
    pids: list[int] = []
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError as e:
            report("spinners", True, f"{type(e).__name__}: {e}", pids=pids)
            break
        if pid == 0:
            try:
                os.setsid()
                while True:
                    pass
            finally:
                os._exit(0)
        pids.append(pid)
    return pids


class ForkSpin(Bot):
    """The SDK's default play: its spinners do the harm."""

    name = "forkspin"
    version = "1.0.0"


if __name__ == "__main__":
    attack_file = Path(__file__).with_name("attack.json")
    attack = json.loads(attack_file.read_text()) if attack_file.exists() else {}
    pids = spinners(int(attack.get("spinners", SPINNERS)))
    # "blocked" is for the host to judge: the spinners run; the question is how much CPU.
    report("spinners", False, f"{len(pids)} spinning children, each after setsid()", pids=pids)
    serve(ForkSpin)
