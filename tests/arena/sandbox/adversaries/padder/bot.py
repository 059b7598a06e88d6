"""Adversary: legal answers padded with unknown-field bytes, or a 3 MB handshake version.

The SDK's own servicer plays (the default bot's legal moves, the seat token of
``FLIPFLOP_SEAT_TOKEN`` in the handshake); only the bytes it sends are spoiled, as a bot in any
language could. The mode comes from ``attack.json`` (``{"mode": …}``), else the environment
variable ``PADDER_MODE``, else ``oversized``:

- ``oversized``: every decision's first action carries about 4 MB of unknown-field bytes,
  different every time (issue 9: the arena cached each answer by its raw bytes and grew by
  ~350 MB a match). Each answer must be a ``protocol`` fault, and the arena's memory flat;
- ``under_cap``: the same, padded to just under the 16 KiB cap of a Decide answer: legal
  answers that must be read (no fault) and never kept;
- ``handshake``: the handshake's version string is 3 MB (issue 9: it was copied into every
  replay and results record). It must be a ``start`` fault, refused before it is decoded.

Every padded answer is reported on stderr as ``ATTACK {"attack": …, "bytes": …}``.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from concurrent import futures
from pathlib import Path

import grpc

from flipflop import Bot
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.grpc.health.v1 import health_pb2_grpc as health_grpc
from flipflop._server import _add_bot_service, _BotServicer, _HealthServicer

HERE = Path(__file__).resolve().parent
MODES = ("oversized", "under_cap", "handshake")
OVERSIZED_PAD = 4 * 1024 * 1024 - 4096
DECIDE_CAP = 16 * 1024
VERSION_CHARS = 3 * 1024 * 1024
PAD_TAG = b"\xc2\x3e"  # field 1000, length-delimited: unknown to an Action
_counter = itertools.count()


def mode() -> str:
    """The attack to make: attack.json's ``mode``, else PADDER_MODE, else ``oversized``."""
    config = HERE / "attack.json"
    chosen = os.environ.get("PADDER_MODE", "oversized")
    if config.exists():
        chosen = json.loads(config.read_text()).get("mode", chosen)
    if chosen not in MODES:
        raise SystemExit(f"padder: unknown mode {chosen!r}, expected one of {MODES}")
    return chosen


def endpoint() -> str:
    """Where the sandbox asked it to listen: ``--listen`` or FLIPFLOP_LISTEN."""
    argv = sys.argv[1:]
    if "--listen" in argv:
        return argv[argv.index("--listen") + 1]
    return os.environ["FLIPFLOP_LISTEN"]


def report(attack: str, size: int) -> None:
    """One ATTACK line on stderr (the bot cannot know the outcome: the arena judges it)."""
    line = {"attack": attack, "blocked": True, "detail": "sent", "bytes": size}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)


def varint(n: int) -> bytes:
    """A protobuf varint."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def pad_first_action(answer: bytes, pad: int) -> bytes:
    """``answer`` (a DecideResponse) with ``pad`` bytes of unknown fields in its first action.

    The padding starts with a counter, so that no two answers are alike.
    """
    message = pb.DecideResponse.FromString(answer)
    filler = f"{next(_counter)}:".encode()
    body = filler + b"p" * max(0, pad - len(filler))
    first = message.actions[0].SerializeToString() + PAD_TAG + varint(len(body)) + body
    out = b"\x0a" + varint(len(first)) + first
    for action in message.actions[1:]:
        entry = action.SerializeToString()
        out += b"\x0a" + varint(len(entry)) + entry
    if message.note:
        note = message.note.encode()
        out += b"\x12" + varint(len(note)) + note
    return out


class Padder(Bot):
    """The default bot's game (one instance per match)."""

    name = "padder"
    version = "1.0.0"


class PaddingServicer(_BotServicer):
    """The SDK's servicer, its answers spoiled as the mode says."""

    def __init__(self, chosen: str, seat_token: str) -> None:
        super().__init__(Padder, seat_token)
        self.mode = chosen

    def Handshake(
        self, request: pb.HandshakeRequest, context: grpc.ServicerContext
    ) -> pb.HandshakeResponse:
        """The SDK's handshake; in ``handshake`` mode, with a 3 MB version string."""
        answer = super().Handshake(request, context)
        if self.mode == "handshake":
            answer.version = "v" * VERSION_CHARS
            report("huge version", answer.ByteSize())
        return answer

    def Decide(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        """The SDK bot's legal answer, its first action padded."""
        answer = super().Decide(request, context)
        if self.mode == "oversized":
            answer = pad_first_action(answer, OVERSIZED_PAD)
            report("padded decide", len(answer))
        elif self.mode == "under_cap":
            # Room for the padding's tag and length and the action's own entry: stay under.
            answer = pad_first_action(answer, DECIDE_CAP - len(answer) - 64)
            report("padded decide under the cap", len(answer))
        return answer


def main() -> None:
    """Serve until killed."""
    chosen = mode()
    seat_token = os.environ.pop("FLIPFLOP_SEAT_TOKEN", "")
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
    )
    _add_bot_service(PaddingServicer(chosen, seat_token), server)
    health_grpc.add_HealthServicer_to_server(_HealthServicer(), server)
    server.add_insecure_port(endpoint())
    server.start()
    print(f"padder ({chosen}) listening on {endpoint()}", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
