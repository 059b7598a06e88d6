"""One decision's round trip, arena → bot → arena, over a unix socket.

Run: ``python benchmarks/roundtrip.py [--calls N] [--rounds R]``. Measures, in the same run:

(a) ``BotClient.decide`` against a ``BotServer`` hosting the default ``Bot`` (trivial: it
    discards its highest card), on a realistic mid-hand PLAY-phase observation — the whole
    path: domain → protobuf → bytes → bot's domain objects → answer → back;
(b) a raw grpcio echo: a generic unary handler that returns the request bytes unchanged (no
    protobuf anywhere), sent a payload of exactly the serialised DecideRequest's size.

Both servers run in this process with the same thread pool and channel options; the two are
measured in alternating rounds so that drift affects both. Prints the median and p90 in
microseconds for each, and the ratio (a) / (b) of the medians (target: at most 1.3).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

import grpc

from flipflop import Bot, MatchConfig, MatchState, Observation, Phase
from flipflop._bot import MatchInfo
from flipflop._client import BotClient
from flipflop._server import MAX_MESSAGE_BYTES, BotServer
from flipflop._wire import decide_request

_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_http_proxy", 0),
    ("grpc.enable_retries", 0),
]


def mid_hand(seed: int = 11) -> tuple[MatchState, Observation]:
    """A 4-seat match in its second hand, at a PLAY decision after several turns."""
    rng = random.Random(seed)
    state = MatchState(MatchConfig(seats=4), seed)
    while True:
        legal = state.legal_actions()
        if state.hand_number >= 2 and state.phase is Phase.PLAY and state.turns >= 10:
            return state, state.observation(state.to_act)
        if state.phase is Phase.START:  # keep the hand going: never drop
            state.apply(legal[1 + int(rng.random() * (len(legal) - 1))])
        else:
            state.apply(rng.choice(legal))


def _time(call: Callable[[], object], n: int) -> list[float]:
    """Microseconds for each of ``n`` calls."""
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        start = clock()
        call()
        out.append((clock() - start) / 1000)
    return out


def _summary(samples: list[float]) -> tuple[float, float]:
    """(median, p90) of some samples."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))]


def main() -> None:
    """Run both measurements and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per round and side")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    args = parser.parse_args()

    state, obs = mid_hand()
    legal = state.legal_actions()
    payload = decide_request("bench", obs, legal, 1000, 10000).SerializeToString()

    with tempfile.TemporaryDirectory(prefix="ff-bench-") as tmp:
        bot_endpoint = f"unix:{Path(tmp) / 'bot.sock'}"
        echo_endpoint = f"unix:{Path(tmp) / 'echo.sock'}"

        echo = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=_OPTIONS)
        handler = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
        echo.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler}),)
        )
        echo.add_insecure_port(echo_endpoint)
        echo.start()
        echo_channel = grpc.insecure_channel(echo_endpoint, options=_OPTIONS)
        echo_call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = echo_channel.unary_unary(
            "/bench.Echo/Echo", request_serializer=None, response_deserializer=None
        )

        with BotServer(Bot(), bot_endpoint) as server, BotClient(server.endpoint) as client:
            client.wait_ready()
            client.handshake()
            players = tuple(f"p{s}" for s in range(state.config.seats))
            client.start_match(MatchInfo("bench", obs.seat, players, state.config, 1000, 10000))

            def decide() -> object:
                return client.decide(
                    "bench", obs, legal, time_left_ms=1000, time_bank_ms=10000, timeout=5.0
                )

            def raw() -> object:
                return echo_call(payload, timeout=5.0)

            _time(decide, 300)  # warm up both paths (connections, caches, thread pool)
            _time(raw, 300)
            sdk: list[float] = []
            baseline: list[float] = []
            for _ in range(args.rounds):
                sdk += _time(decide, args.calls)
                baseline += _time(raw, args.calls)
        echo_channel.close()
        echo.stop(None).wait()

    sdk_median, sdk_p90 = _summary(sdk)
    raw_median, raw_p90 = _summary(baseline)
    print(
        f"observation: seat {obs.seat}, hand {obs.hand_number}, turn {obs.turn}, "
        f"{len(obs.history)} events, {len(legal)} legal actions; "
        f"DecideRequest {len(payload)} bytes"
    )
    print(f"{'':28s} {'median µs':>10s} {'p90 µs':>10s}")
    print(f"{'(a) BotClient.decide':28s} {sdk_median:10.1f} {sdk_p90:10.1f}")
    print(f"{'(b) raw grpcio echo':28s} {raw_median:10.1f} {raw_p90:10.1f}")
    print(f"ratio (a)/(b), medians: {sdk_median / raw_median:.2f}  (target <= 1.3)")


if __name__ == "__main__":
    main()
