"""A protocol 1.1 bot written without the SDK's server: one unary Decide call per decision.

It stands for a bot written before protocol 1.2, or in another language: grpcio and the
generated stubs only (``bot_pb2``, ``bot_pb2_grpc``, the health service). Its handshake says
"1.1" and does not announce ``decide-stream``, so the arena asks it with ``Decide``; it still
does everything the arena requires of any bot:

- it listens where ``--listen`` (or ``FLIPFLOP_LISTEN``) says and prints
  ``serving unaryonly on <endpoint>`` once it does, as the SDK's ``serve`` does;
- it reads the seat token from ``FLIPFLOP_SEAT_TOKEN`` once, removes it from its environment
  and sends it back in every handshake;
- it answers the health check for ``""`` and ``flipflop.v1.Bot``;
- it plays legal: in PHASE_START it draws from the stock, in PHASE_PLAY it discards the first
  card the legal list offers (no steps if there is no discard to make).

Tests use it next to SDK bots: a match, a ladder and ``arena check`` must treat it as any bot.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from types import FrameType

import grpc

from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.flipflop.v1 import bot_pb2_grpc as pb_grpc
from flipflop._proto.grpc.health.v1 import health_pb2, health_pb2_grpc

NAME = "unaryonly"
PROTOCOL_VERSION = "1.1"
FEATURES = ("concurrent-matches",)
# Read once and removed from the environment, so that no child process or log sees it.
SEAT_TOKEN = os.environ.pop("FLIPFLOP_SEAT_TOKEN", "")


class UnaryOnlyBot(pb_grpc.BotServicer):
    """The ``flipflop.v1.Bot`` service, unary calls only; matches kept apart by match id."""

    def __init__(self) -> None:
        self._seats: dict[str, int] = {}
        self._lock = threading.Lock()

    def Handshake(
        self, request: pb.HandshakeRequest, context: grpc.ServicerContext
    ) -> pb.HandshakeResponse:
        """Protocol 1.1, no decide-stream; the seat token sent back."""
        major = request.protocol_version.split(".", 1)[0]
        if major != PROTOCOL_VERSION.split(".", 1)[0]:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol version mismatch: the arena speaks {request.protocol_version}, "
                f"this bot speaks {PROTOCOL_VERSION}; the major versions must match",
            )
        return pb.HandshakeResponse(
            protocol_version=PROTOCOL_VERSION,
            name=NAME,
            version="1.0.0",
            features=FEATURES,
            runtime=f"python {sys.version.split()[0]} / grpcio {grpc.__version__}, no SDK",
            seat_token=SEAT_TOKEN,
        )

    def StartMatch(
        self, request: pb.StartMatchRequest, context: grpc.ServicerContext
    ) -> pb.StartMatchResponse:
        """Remember the match's seat."""
        with self._lock:
            if request.match_id in self._seats:
                context.abort(
                    grpc.StatusCode.ALREADY_EXISTS, f"match {request.match_id!r} already started"
                )
            self._seats[request.match_id] = request.seat
        return pb.StartMatchResponse()

    def Decide(self, request: pb.DecideRequest, context: grpc.ServicerContext) -> pb.DecideResponse:
        """Draw from the stock to start a turn; discard the first card offered to play it."""
        if request.match_id not in self._seats:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION, f"unknown match {request.match_id!r}"
            )
        if request.observation.phase == pb.PHASE_START:
            wanted = pb.ACTION_KIND_DRAW_STOCK
        else:
            wanted = pb.ACTION_KIND_DISCARD
        for action in request.legal:
            if action.kind == wanted:
                return pb.DecideResponse(actions=[action])
        return pb.DecideResponse()

    def DecideStream(
        self, request_iterator: Iterator[pb.DecideRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.DecideResponse]:
        """Not served: this bot speaks 1.1 (what the generated base class answers, too)."""
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "DecideStream: this bot speaks protocol 1.1")

    def HandEnded(
        self, request: pb.HandEndedRequest, context: grpc.ServicerContext
    ) -> pb.HandEndedResponse:
        """Nothing to learn."""
        return pb.HandEndedResponse()

    def EndMatch(
        self, request: pb.EndMatchRequest, context: grpc.ServicerContext
    ) -> pb.EndMatchResponse:
        """Forget the match."""
        with self._lock:
            self._seats.pop(request.match_id, None)
        return pb.EndMatchResponse()


class Health(health_pb2_grpc.HealthServicer):
    """SERVING for the whole server and for ``flipflop.v1.Bot``; NOT_FOUND for anything else."""

    def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        """Answer SERVING."""
        if request.service not in ("", "flipflop.v1.Bot"):
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


def endpoint(argv: list[str]) -> str:
    """``--listen X`` or ``--listen=X``, else ``FLIPFLOP_LISTEN``, else a socket in /tmp."""
    for i, arg in enumerate(argv):
        if arg == "--listen" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--listen="):
            return arg.removeprefix("--listen=")
    return os.environ.get("FLIPFLOP_LISTEN", f"unix:/tmp/flipflop-{NAME}.sock")


def main() -> None:
    """Serve until SIGTERM or SIGINT."""
    where = endpoint(sys.argv[1:])
    socket_file = Path(where.removeprefix("unix:")) if where.startswith("unix:") else None
    if socket_file is not None:
        socket_file.unlink(missing_ok=True)  # left by an earlier run
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb_grpc.add_BotServicer_to_server(UnaryOnlyBot(), server)
    health_pb2_grpc.add_HealthServicer_to_server(Health(), server)
    if server.add_insecure_port(where) == 0:
        sys.exit(f"{NAME}: cannot listen on {where}")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.start()
    print(f"serving {NAME} on {where}", flush=True)
    while not stop.wait(0.5):
        pass
    server.stop(2).wait()
    if socket_file is not None:
        socket_file.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
