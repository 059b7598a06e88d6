"""Adversary: tries to read what is not its own.

On its first decision it tries to read each file (or list each directory) in attack.json
``read`` (a secret the test planted on the host, the arena's own source files, /etc/shadow,
the other seats' code, scratch directories and logs), to
connect to each unix socket in ``dial`` (the other seats' bots, the Docker engine), and counts
the processes it can see. Whatever it manages to read, it reports a digest of, never the text.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from flipflop import Action, Bot, Observation, serve

CONFIG = json.loads((Path(__file__).resolve().parent / "attack.json").read_text())


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def read(path: str) -> None:
    """Read a file (list a directory); report a digest of what it got, if anything."""
    try:
        target = Path(path)
        if target.is_dir():
            data = "\n".join(sorted(os.listdir(target))).encode()
        else:
            data = target.read_bytes()
        report(f"read {path}", False, "read", sha256=hashlib.sha256(data).hexdigest())
    except OSError as e:
        report(f"read {path}", True, f"{type(e).__name__}: {e}")


def dial(path: str) -> None:
    """Connect to a unix socket."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(path)
        report(f"dial {path}", False, "connected")
    except OSError as e:
        report(f"dial {path}", True, f"{type(e).__name__}: {e}")


def processes() -> None:
    """Count the processes visible in /proc; a sandbox shows only the bot's own."""
    mine = os.getpid()
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    others = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as fh:
                uid = next(line.split()[1] for line in fh if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if pid != mine and int(uid) != os.getuid():
            others.append(pid)
    report("see other processes", not others, f"{len(others)} of other users", count=len(others))


def attack() -> None:
    """Every attempt, each reported."""
    for path in CONFIG["read"]:
        read(path)
    for path in CONFIG["dial"]:
        dial(path)
    processes()
    print("ATTACKS DONE", file=sys.stderr, flush=True)


class Snoop(Bot):
    """Plays the default game after its attack on the first decision."""

    name = "snoop"
    version = "1.0.0"
    tried = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Attack once, then play the default."""
        if not self.tried:
            self.tried = True
            attack()
        return super().start_turn(obs, legal)


if __name__ == "__main__":
    serve(Snoop())
