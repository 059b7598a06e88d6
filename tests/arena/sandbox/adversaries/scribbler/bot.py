"""Adversary: writes where it should not, and as much as it can where it may.

On its first decision it tries to create each file named in attack.json ``outside`` (paths
outside its sandbox: the test checks on the host whether they appeared, and removes them), and
a file in its own socket directory (the one host directory a container sees). Then it fills
its scratch space (``$TMPDIR``) with 1 MB files, up to 64 MB, and writes one file of up to
64 MB: the first is bounded by the size of ``/tmp``, the second by the file-size limit.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from flipflop import Action, Bot, Observation, serve

CONFIG = json.loads((Path(__file__).resolve().parent / "attack.json").read_text())
MB = 1024 * 1024
CAP_MB = 64


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def write(path: str) -> None:
    """Create ``path`` with a line in it."""
    try:
        with open(path, "x") as fh:
            fh.write("written by the scribbler adversary\n")
        report(f"write {path}", False, "created")
    except OSError as e:
        report(f"write {path}", True, f"{type(e).__name__}: {e}")


def fill_tmp() -> None:
    """Many 1 MB files in $TMPDIR until refused (or CAP_MB)."""
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    written = 0
    error = ""
    chunk = b"\x00" * MB
    try:
        for i in range(CAP_MB):
            with open(tmp / f"fill-{i}", "wb") as fh:
                fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
            written += MB
    except OSError as e:
        error = f"{type(e).__name__}: {e}"
    report("fill tmp", bool(error), error, mb=round(written / MB, 1))
    for i in range(CAP_MB):
        (tmp / f"fill-{i}").unlink(missing_ok=True)


def big_file() -> None:
    """One file, written 1 MB at a time, until refused (or CAP_MB)."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / "big"
    written = 0
    error = ""
    chunk = b"\x00" * MB
    try:
        with open(path, "wb", buffering=0) as fh:
            for _ in range(CAP_MB):
                written += fh.write(chunk) or 0
    except OSError as e:
        error = f"{type(e).__name__}: {e}"
    report("big file", bool(error), error, mb=round(written / MB, 1))
    path.unlink(missing_ok=True)


def attack() -> None:
    """Every attempt, each reported."""
    for path in CONFIG["outside"]:
        write(path)
    listen = os.environ.get("FLIPFLOP_LISTEN", "")
    if listen.startswith("unix:"):
        write(str(Path(listen[len("unix:") :]).parent / "scribbled"))
    fill_tmp()
    big_file()
    print("ATTACKS DONE", file=sys.stderr, flush=True)


class Scribbler(Bot):
    """Plays the default game after its attack on the first decision."""

    name = "scribbler"
    version = "1.0.0"
    tried = False

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Attack once, then play the default."""
        if not self.tried:
            self.tried = True
            attack()
        return super().start_turn(obs, legal)


if __name__ == "__main__":
    # Past the file-size limit the kernel sends SIGXFSZ, which would kill the process:
    # ignored, the write fails with EFBIG instead, which is what this adversary reports.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    serve(Scribbler())
