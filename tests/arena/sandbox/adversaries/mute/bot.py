"""Adversary: a gRPC server that never answers, written without the SDK's server.

attack.json ``mode``:

- ``handshake``: the health check answers SERVING, so the arena goes on to the handshake,
  which (like every other call) never gets an answer;
- ``listen``: it never opens its socket at all.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc

from flipflop._proto.grpc.health.v1 import health_pb2

CONFIG = json.loads((Path(__file__).resolve().parent / "attack.json").read_text())


def endpoint() -> str:
    """Where the sandbox asked it to listen: ``--listen`` or FLIPFLOP_LISTEN."""
    argv = sys.argv[1:]
    if "--listen" in argv:
        return argv[argv.index("--listen") + 1]
    return os.environ["FLIPFLOP_LISTEN"]


def serving(request: bytes, context: grpc.ServicerContext) -> bytes:
    """Health.Check: SERVING, whatever was asked."""
    status = health_pb2.HealthCheckResponse.SERVING
    return health_pb2.HealthCheckResponse(status=status).SerializeToString()


def silent(request: bytes, context: grpc.ServicerContext) -> bytes:
    """Any call of the bot service: block until the arena gives up."""
    print(f"ATTACK silent on a call ({len(request)} bytes)", file=sys.stderr, flush=True)
    threading.Event().wait()
    return b""


def main() -> None:
    """Serve (or not, in ``listen`` mode) until killed."""
    if CONFIG["mode"] == "listen":
        print("ATTACK never listening", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    methods = ("Handshake", "StartMatch", "Decide", "HandEnded", "EndMatch")
    bot = {m: grpc.unary_unary_rpc_method_handler(silent) for m in methods}
    health = {"Check": grpc.unary_unary_rpc_method_handler(serving)}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler("flipflop.v1.Bot", bot),
            grpc.method_handlers_generic_handler("grpc.health.v1.Health", health),
        )
    )
    server.add_insecure_port(endpoint())
    server.start()
    print(f"ATTACK listening on {endpoint()}, answering nothing", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
