"""Adversary: a gRPC server, written without the SDK's server, that answers with junk.

The handshake and the notices get proper answers (the handshake presents the seat token the
arena started it with, ``FLIPFLOP_SEAT_TOKEN``, so that the match starts and each misbehaviour
below is judged for what it is); each decision gets the next kind of bad answer from
:data:`MODES` (then garbage again), and the adversary reports which it sent:

- ``garbage``: bytes that are not a DecideResponse at all;
- ``card99``: a well-formed message discarding card 99 (there are 52);
- ``kind99``: an action of a kind that does not exist;
- ``huge_note``: a 5 MB debug note, far over the 16 KiB cap of a Decide answer;
- ``many_actions``: 100 000 actions in one answer (about 400 KB: over the cap too);
- ``illegal``: a well-formed action the rules do not allow now.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent import futures
from typing import Any

import grpc

from flipflop import PROTOCOL_VERSION
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.grpc.health.v1 import health_pb2

MODES = ("garbage", "card99", "kind99", "huge_note", "many_actions", "illegal")
# Read once and removed from the environment, as the SDK's server does.
SEAT_TOKEN = os.environ.pop("FLIPFLOP_SEAT_TOKEN", "")
_calls = 0
_lock = threading.Lock()


def endpoint() -> str:
    """Where the sandbox asked it to listen: ``--listen`` or FLIPFLOP_LISTEN."""
    argv = sys.argv[1:]
    if "--listen" in argv:
        return argv[argv.index("--listen") + 1]
    return os.environ["FLIPFLOP_LISTEN"]


def answer(mode: str, phase: int) -> bytes:
    """The bad DecideResponse (as bytes) for ``mode``."""
    if mode == "garbage":
        return b"\xff\xff\xff\xff\x0f garbage"
    if mode == "card99":
        actions = [pb.Action(kind=pb.ACTION_KIND_DISCARD, cards=[99])]
    elif mode == "kind99":
        actions = [pb.Action(kind=99)]  # type: ignore[arg-type]
    elif mode == "huge_note":
        return pb.DecideResponse(note="x" * (5 * 1024 * 1024)).SerializeToString()
    elif mode == "many_actions":
        actions = [pb.Action(kind=pb.ACTION_KIND_DRAW_STOCK)] * 100_000
    else:  # illegal: a discard when a draw is due; a meld of nothing when a discard is
        kind = pb.ACTION_KIND_DISCARD if phase == pb.PHASE_START else pb.ACTION_KIND_MELD
        actions = [pb.Action(kind=kind, cards=[0, 1, 2] if kind == pb.ACTION_KIND_MELD else [0])]
    return pb.DecideResponse(actions=actions).SerializeToString()


def decide(request: bytes, context: grpc.ServicerContext) -> bytes:
    """Decide: the next bad answer."""
    global _calls
    with _lock:
        mode = MODES[_calls] if _calls < len(MODES) else "garbage"
        _calls += 1
    phase = pb.DecideRequest.FromString(request).observation.phase
    line = {"attack": mode, "blocked": True, "detail": "sent", "phase": int(phase)}
    print("ATTACK " + json.dumps(line), file=sys.stderr, flush=True)
    return answer(mode, phase)


def handshake(request: bytes, context: grpc.ServicerContext) -> bytes:
    """Handshake: a proper answer with the seat token, so that the match starts."""
    return pb.HandshakeResponse(
        protocol_version=PROTOCOL_VERSION,
        name="garbler",
        version="1.0.0",
        runtime="raw grpc",
        seat_token=SEAT_TOKEN,
    ).SerializeToString()


def empty(request: bytes, context: grpc.ServicerContext) -> bytes:
    """StartMatch, HandEnded, EndMatch: an empty (valid) answer."""
    return b""


def serving(request: bytes, context: grpc.ServicerContext) -> bytes:
    """Health.Check: SERVING."""
    status = health_pb2.HealthCheckResponse.SERVING
    return health_pb2.HealthCheckResponse(status=status).SerializeToString()


def main() -> None:
    """Serve until killed."""
    bot: dict[str, Any] = {
        "Handshake": grpc.unary_unary_rpc_method_handler(handshake),
        "StartMatch": grpc.unary_unary_rpc_method_handler(empty),
        "Decide": grpc.unary_unary_rpc_method_handler(decide),
        "HandEnded": grpc.unary_unary_rpc_method_handler(empty),
        "EndMatch": grpc.unary_unary_rpc_method_handler(empty),
    }
    health = {"Check": grpc.unary_unary_rpc_method_handler(serving)}
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler("flipflop.v1.Bot", bot),
            grpc.method_handlers_generic_handler("grpc.health.v1.Health", health),
        )
    )
    server.add_insecure_port(endpoint())
    server.start()
    print(f"listening on {endpoint()}", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
