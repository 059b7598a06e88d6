"""One decision's round trip, arena → bot → arena, over a unix socket.

Run: ``python benchmarks/roundtrip.py [--calls N] [--rounds R]``. Measures, in the same run:

(a) ``BotClient.decide`` against a ``BotServer`` hosting the default ``Bot`` (trivial: it
    discards its highest card), on a realistic mid-hand PLAY-phase observation — the whole
    path: domain → protobuf → bytes → bot's domain objects → answer → back;
(b) a raw grpcio echo: a generic unary handler that returns the request bytes unchanged (no
    protobuf anywhere), sent a payload of exactly the serialised DecideRequest's size;
(c) ``BotClient.decide`` over ``DecideStream`` (protocol 1.2): the same as (a), but on one
    stream for the match, as the arena asks a bot that announces ``decide-stream``;
(d) a raw grpcio stream echo: a generic stream handler that yields each request's bytes
    unchanged; the client sends the same payload as (b) and waits for its echo before it
    sends the next, as the arena does.

Both servers run in this process with the same thread pool and channel options; the four are
measured in alternating rounds so that drift affects all. Prints the median and p90 in
microseconds for each, the ratio (a) / (b) of the medians (target: at most 1.3), and the line
``decide/stream-echo: N.NN``, the ratio (c) / (d) of the medians (target: at most 1.15).

Then (c) and (d) again with each server in a process of its own, as in a ladder, counting
CPU time instead of wall time: this process's (``time.process_time``) and the server's
(``/proc/PID/stat``), over ``--calls`` times ``--rounds`` calls each, alternating. Prints the CPU
per call of each and ``decide/stream-echo cpu: N.NN``, their ratio (target: at most 1.3).
Load inflates CPU time far less than it inflates wall time.
"""

from __future__ import annotations

import argparse
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import replace
from pathlib import Path

import grpc

from arena.sandbox._base import process_cpu_seconds
from flipflop import Action, Bot, MatchConfig, MatchState, Observation, Phase
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


def _echo_stream(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    """The raw stream echo: each request's bytes back, unchanged."""
    yield from requests


def _serve(kind: str, endpoint: str) -> None:
    """``--serve``: host the bot (``bot``) or the raw echo (``echo``) until stdin closes."""
    if kind == "bot":
        with BotServer(Bot(), endpoint):
            print("ready", flush=True)
            sys.stdin.read()
        return
    echo = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=_OPTIONS)
    handlers = {"EchoStream": grpc.stream_stream_rpc_method_handler(_echo_stream)}
    echo.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", handlers),))
    echo.add_insecure_port(endpoint)
    echo.start()
    print("ready", flush=True)
    sys.stdin.read()
    echo.stop(None).wait()


def _process_cpu(pid: int) -> float:
    """CPU seconds (user and system, every thread) of the server ``pid`` so far."""
    used = process_cpu_seconds(pid)
    if used is None:
        raise SystemExit(f"the server (pid {pid}) is gone")
    return used


def _server(kind: str, endpoint: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, endpoint],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    if child.stdout.readline().strip() != "ready":
        raise SystemExit(f"the {kind} server did not start")
    return child


def cpu_per_call(obs: Observation, legal: list[Action], calls: int, rounds: int) -> None:
    """(c) and (d) with the servers in processes of their own: CPU per call, both sides."""
    payload = decide_request("bench", obs, legal, 1000, 10000).SerializeToString()
    with tempfile.TemporaryDirectory(prefix="ff-bench-cpu-") as tmp:
        bot = _server("bot", f"unix:{Path(tmp) / 'bot.sock'}")
        echo = _server("echo", f"unix:{Path(tmp) / 'echo.sock'}")
        channel = grpc.insecure_channel(f"unix:{Path(tmp) / 'echo.sock'}", options=_OPTIONS)
        requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        echoes = iter(
            channel.stream_stream(
                "/bench.Echo/EchoStream", request_serializer=None, response_deserializer=None
            )(iter(requests.get, None))
        )
        with BotClient(f"unix:{Path(tmp) / 'bot.sock'}") as client:
            client.wait_ready()
            client.handshake()
            seats = len(obs.bankrolls)
            players = tuple(f"p{s}" for s in range(seats))
            config = MatchConfig(seats=seats)
            client.start_match(MatchInfo("bench", obs.seat, players, config, 1000, 10000))

            def decide() -> object:
                return client.decide(
                    "bench", obs, legal, time_left_ms=1000, time_bank_ms=10000, timeout=5.0
                )

            def raw() -> object:
                requests.put(payload)
                return next(echoes)

            sides = ((decide, bot.pid), (raw, echo.pid))
            used = [0.0, 0.0]
            for call, _ in sides:
                _time(call, 300)  # warm up
            for _ in range(rounds):
                for i, (call, pid) in enumerate(sides):
                    mine, theirs = time.process_time(), _process_cpu(pid)
                    for _ in range(calls):
                        call()
                    used[i] += time.process_time() - mine + _process_cpu(pid) - theirs
        requests.put(None)
        channel.close()
        for child in (bot, echo):
            assert child.stdin is not None
            child.stdin.close()
            child.wait(timeout=30)
    n = calls * rounds
    decide_us, echo_us = (u / n * 1e6 for u in used)
    print(f"CPU per call, servers in their own processes (both sides, {n} calls each):")
    print(f"  (c) BotClient.decide, stream {decide_us:8.1f} µs")
    print(f"  (d) raw grpcio stream echo   {echo_us:8.1f} µs")
    print(f"decide/stream-echo cpu: {decide_us / echo_us:.2f}  (target <= 1.3)")


def main() -> None:
    """Run both measurements and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per round and side")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "ENDPOINT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(*args.serve)
        return

    state, obs = mid_hand()
    legal = state.legal_actions()
    payload = decide_request("bench", obs, legal, 1000, 10000).SerializeToString()

    with tempfile.TemporaryDirectory(prefix="ff-bench-") as tmp:
        bot_endpoint = f"unix:{Path(tmp) / 'bot.sock'}"
        echo_endpoint = f"unix:{Path(tmp) / 'echo.sock'}"

        echo = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=_OPTIONS)
        handlers = {
            "Echo": grpc.unary_unary_rpc_method_handler(lambda request, context: request),
            "EchoStream": grpc.stream_stream_rpc_method_handler(_echo_stream),
        }
        echo.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("bench.Echo", handlers),)
        )
        echo.add_insecure_port(echo_endpoint)
        echo.start()
        echo_channel = grpc.insecure_channel(echo_endpoint, options=_OPTIONS)
        echo_call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = echo_channel.unary_unary(
            "/bench.Echo/Echo", request_serializer=None, response_deserializer=None
        )
        echo_requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        echo_stream = echo_channel.stream_stream(
            "/bench.Echo/EchoStream", request_serializer=None, response_deserializer=None
        )(iter(echo_requests.get, None))
        echoes = iter(echo_stream)

        with (
            BotServer(Bot(), bot_endpoint) as server,
            BotClient(server.endpoint) as unary_client,
            BotClient(server.endpoint) as stream_client,
        ):
            unary_client.wait_ready()
            players = tuple(f"p{s}" for s in range(state.config.seats))
            info = MatchInfo("bench", obs.seat, players, state.config, 1000, 10000)
            unary_client.start_match(info)  # no handshake: Decide, one call each
            stream_client.handshake()  # announces decide-stream: DecideStream
            stream_client.start_match(replace(info, match_id="bench-stream"))

            def decide() -> object:
                return unary_client.decide(
                    "bench", obs, legal, time_left_ms=1000, time_bank_ms=10000, timeout=5.0
                )

            def decide_on_stream() -> object:
                return stream_client.decide(
                    "bench-stream", obs, legal, time_left_ms=1000, time_bank_ms=10000, timeout=5.0
                )

            def raw() -> object:
                return echo_call(payload, timeout=5.0)

            def raw_stream() -> object:  # the next request once the last one is echoed
                echo_requests.put(payload)
                return next(echoes)

            sides = (decide, raw, decide_on_stream, raw_stream)
            for side in sides:  # warm up every path (connections, caches, thread pool)
                _time(side, 300)
            samples: list[list[float]] = [[] for _ in sides]
            for _ in range(args.rounds):
                for side, out in zip(sides, samples, strict=True):
                    out += _time(side, args.calls)
        echo_requests.put(None)
        echo_channel.close()
        echo.stop(None).wait()

    names = (
        "(a) BotClient.decide",
        "(b) raw grpcio echo",
        "(c) BotClient.decide, stream",
        "(d) raw grpcio stream echo",
    )
    summaries = [_summary(out) for out in samples]
    print(
        f"observation: seat {obs.seat}, hand {obs.hand_number}, turn {obs.turn}, "
        f"{len(obs.history)} events, {len(legal)} legal actions; "
        f"DecideRequest {len(payload)} bytes"
    )
    print(f"{'':28s} {'median µs':>10s} {'p90 µs':>10s}")
    for name, (median, p90) in zip(names, summaries, strict=True):
        print(f"{name:28s} {median:10.1f} {p90:10.1f}")
    (decide_us, _), (echo_us, _), (stream_us, _), (stream_echo_us, _) = summaries
    print(f"ratio (a)/(b), medians: {decide_us / echo_us:.2f}  (target <= 1.3)")
    print(f"decide/unary-echo: {decide_us / echo_us:.2f}")
    print(f"decide/stream-echo: {stream_us / stream_echo_us:.2f}  (target <= 1.15)")
    cpu_per_call(obs, legal, args.calls, args.rounds)


if __name__ == "__main__":
    main()
