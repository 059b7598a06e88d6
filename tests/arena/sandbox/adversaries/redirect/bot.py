"""Adversary: makes the arena talk to another seat's bot instead of its own.

attack.json:

- ``mode: "symlink"``: its socket path becomes a symbolic link to ``target`` (another
  seat's socket; by default the next seat's, worked out from its own path), so that an
  arena that follows links sends this seat's handshake, match and decisions to the victim;
- ``mode: "relay"``: it serves its socket and copies every connection's bytes to and from
  ``target``, so that the victim answers for it (only the seat token tells them apart).

It reports ``ATTACK {json}`` lines on stderr and never plays a move itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

CONFIG = json.loads((Path(__file__).resolve().parent / "attack.json").read_text())


def report(**fields: object) -> None:
    """One ``ATTACK {json}`` line for the test to read."""
    print("ATTACK " + json.dumps(fields), file=sys.stderr, flush=True)


def own_path() -> str:
    """Its socket path, from ``--listen unix:PATH`` or FLIPFLOP_LISTEN."""
    argv = sys.argv[1:]
    listen = (
        argv[argv.index("--listen") + 1] if "--listen" in argv else os.environ["FLIPFLOP_LISTEN"]
    )
    return listen.removeprefix("unix:")


def victim_path(own: str) -> str:
    """``target`` from attack.json, else the next seat's socket next to its own."""
    if CONFIG.get("target"):
        return str(CONFIG["target"])
    p = Path(own)
    seat_dir = p.parent.parent  # .../seat<N>/sock/bot.sock
    n = int(seat_dir.name.removeprefix("seat"))
    return str(seat_dir.parent / f"seat{n + 1}" / "sock" / p.name)


def pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes one way until either side closes."""
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def relay(own: str, target: str) -> None:
    """Serve ``own`` and relay every connection to ``target``."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(own)
    server.listen(16)
    report(attack="relay", listening=own, target=target)
    while True:
        conn, _ = server.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError as e:
            report(attack="relay", connected=False, error=str(e))
            conn.close()
            continue
        report(attack="relay", connected=True)
        threading.Thread(target=pipe, args=(conn, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()


def main() -> None:
    """Attack, then idle until killed."""
    own = own_path()
    target = victim_path(own)
    if CONFIG["mode"] == "symlink":
        try:
            os.symlink(target, own)
            report(attack="symlink", linked=True, target=target)
        except OSError as e:
            report(attack="symlink", linked=False, error=str(e))
    else:
        relay(own, target)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
