"""Bounded resources on the wire: every answer's size cap, padded answers, and flat memory.

The attacks of issue 9 ("arena memory growth with no fault"), each against the real client
over a real unix socket: a legal answer padded with 4 MB of unknown-field bytes, which the
arena used to cache by its raw bytes (it grew ~350 MB per match); a 3 MB handshake version
string, which went into every replay; answers one byte over their call's cap. The bots here
are raw gRPC servers (any language can send such bytes), counting the calls they get.
"""

from __future__ import annotations

import itertools
import os
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from flipflop import (
    ANSWER_CAPS,
    DRAW_STOCK,
    PROTOCOL_VERSION,
    ActionKind,
    Bot,
    BotClient,
    BotProtocolError,
    BotServer,
    MatchConfig,
    MatchInfo,
    MatchResult,
    MatchState,
    Phase,
    Termination,
)
from flipflop import _wire as wire
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.grpc.health.v1 import health_pb2

PAD_FIELD = b"\xc2\x3e"  # field 1000, length-delimited: unknown to every message here
FOUR_MB = 4 * 1024 * 1024 - 64  # the attack: just under the old 4 MiB message limit


def varint(n: int) -> bytes:
    """A protobuf varint."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def padding(n: int, fill: bytes = b"p") -> bytes:
    """An unknown length-delimited field of exactly ``n`` bytes (tag and length included)."""
    for width in (1, 2, 3, 4):
        body = n - len(PAD_FIELD) - width
        if body >= 0 and len(varint(body)) == width:
            return PAD_FIELD + varint(body) + (fill * (body // len(fill) + 1))[:body]
    raise AssertionError(f"no padding of exactly {n} bytes")


def pad_to(message: bytes, size: int) -> bytes:
    """``message`` with unknown-field bytes appended, ``size`` bytes in all (still valid)."""
    padded = message + padding(size - len(message))
    assert size == len(padded)
    return padded


def padded_action(action_body: bytes, n: int, fill: bytes = b"p") -> bytes:
    """A DecideResponse of one action whose own bytes carry ``n`` bytes of unknown fields.

    The shape of the attack: the action itself is padded, so its raw bytes (the old cache
    key) are megabytes long.
    """
    body = action_body + padding(n, fill)
    return b"\x0a" + varint(len(body)) + body


DRAW_BODY = pb.Action(kind=pb.ACTION_KIND_DRAW_STOCK).SerializeToString()
HANDSHAKE = pb.HandshakeResponse(
    protocol_version=PROTOCOL_VERSION, name="padder", version="1.0.0"
).SerializeToString()
SERVING = health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
DECIDE = pb.DecideResponse(actions=[pb.Action(kind=pb.ACTION_KIND_DRAW_STOCK)]).SerializeToString()
BASE_ANSWERS: dict[str, bytes] = {
    "Handshake": HANDSHAKE,
    "StartMatch": b"",
    "Decide": DECIDE,
    "HandEnded": b"",
    "EndMatch": b"",
    "Health.Check": SERVING.SerializeToString(),
}
Answer = Callable[[bytes], bytes]
_fills = itertools.count()


def unique_fill() -> bytes:
    """Padding bytes never used before in this process: every padded answer is new."""
    return f"{next(_fills)}-".encode()


def constant(data: bytes) -> Answer:
    """An answer that is always ``data``."""
    return lambda request: data


class RawBot:
    """A raw gRPC bot: answers each call with the bytes its ``answers`` give; counts calls.

    Args:
        endpoint: where to listen.
        answers: per call name (``Handshake``, ``Decide``, ``Health.Check``, …), a function of
            the request's bytes; the calls not given get a valid minimal answer.
    """

    def __init__(self, endpoint: str, **answers: Answer) -> None:
        self.calls: list[str] = []
        self._lock = threading.Lock()
        self.answers: dict[str, Answer] = {
            call: constant(data) for call, data in BASE_ANSWERS.items()
        }
        self.answers.update(answers)
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=4),
            options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
        )
        bot = {
            m: grpc.unary_unary_rpc_method_handler(self._handler(m))
            for m in ("Handshake", "StartMatch", "Decide", "HandEnded", "EndMatch")
        }
        health = {"Check": grpc.unary_unary_rpc_method_handler(self._handler("Health.Check"))}
        self.server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler("flipflop.v1.Bot", bot),
                grpc.method_handlers_generic_handler("grpc.health.v1.Health", health),
            )
        )
        self.server.add_insecure_port(endpoint)

    def _handler(self, call: str) -> Callable[[bytes, Any], bytes]:
        def handle(request: bytes, context: Any) -> bytes:
            with self._lock:
                self.calls.append(call)
            return self.answers[call](request)

        return handle

    def __enter__(self) -> RawBot:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(None).wait()


@pytest.fixture
def client(endpoint: str) -> Iterator[BotClient]:
    """A client of ``endpoint`` with the default limits (what the arena uses)."""
    with BotClient(endpoint, name="padder") as client:
        yield client


def ask(client: BotClient, timeout: float = 10) -> list[Any]:
    """One decision at the start of a turn; the actions answered."""
    state = MatchState(MatchConfig(seats=3), 0, dealer=2)
    return client.decide(
        "m",
        state.observation(0),
        state.legal_actions(),
        time_left_ms=1000,
        time_bank_ms=0,
        timeout=timeout,
    ).actions


def make_call(client: BotClient, call: str) -> object:
    """Make ``call`` through the client; its result (True/False for health)."""
    config = MatchConfig(seats=3, hand_cap=1)
    state = MatchState(config, 1)
    while not state.is_over:
        state.apply(DRAW_STOCK if state.phase is Phase.START else state.legal_actions()[0])
    result = state.result
    assert isinstance(result, MatchResult)
    if call == "Handshake":
        return client.handshake(timeout=10)
    if call == "StartMatch":
        client.start_match(MatchInfo("m", 0, ("a", "b", "c"), config, 1000, 0), 10)
    elif call == "Decide":
        return ask(client)
    elif call == "HandEnded":
        client.hand_ended("m", state.results[0], 10)
    elif call == "EndMatch":
        client.end_match("m", result, 10)
    else:
        return client.health(timeout=10)
    return None


def cached_key_bytes() -> int:
    """The bytes of every key the decoding caches hold now (what a padded answer would grow)."""
    caches: list[dict[bytes, Any]] = [
        wire._ACTION_CACHE,
        wire._EVENT_CACHE,
        wire._SPREAD_CACHE,
        wire._SHOW_CACHE,
        wire._SEAT_CACHE,
        wire._POTS_CACHE,
    ]
    return sum(len(key) for cache in caches for key in cache)


def resident_bytes() -> int:
    """This process's resident memory (Linux /proc)."""
    pages = Path("/proc/self/statm").read_text().split()[1]
    return int(pages) * os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------------------- caps


def test_the_caps_are_what_the_protocol_says() -> None:
    """16 KiB for a decision, 8 KiB for the handshake, 1 KiB for every other answer."""
    assert {
        "Handshake": 8192,
        "StartMatch": 1024,
        "Decide": 16384,
        "HandEnded": 1024,
        "EndMatch": 1024,
        "Health.Check": 1024,
    } == dict(ANSWER_CAPS)
    assert 16384 == wire.MAX_ANSWER_BYTES


@pytest.mark.parametrize("call", sorted(ANSWER_CAPS))
def test_an_answer_at_its_cap_is_accepted(endpoint: str, client: BotClient, call: str) -> None:
    """An answer of exactly its call's cap (padded with unknown fields) is read as usual."""
    answer = pad_to(BASE_ANSWERS[call], ANSWER_CAPS[call])
    with RawBot(endpoint, **{call: lambda request: answer}):
        result = make_call(client, call)
    expected = {"Decide": [DRAW_STOCK], "Health.Check": True}
    if call in expected:
        assert expected[call] == result
    elif call == "Handshake":
        assert "padder" == getattr(result, "name", None)


@pytest.mark.parametrize("call", sorted(set(ANSWER_CAPS) - {"Health.Check"}))
def test_an_answer_one_byte_over_its_cap_is_a_protocol_error(
    endpoint: str, client: BotClient, call: str
) -> None:
    """One byte over its call's cap: a protocol error that gives the size and the cap.

    Decide's cap is the largest, gRPC's own limit: gRPC refuses the answer, in its own words.
    """
    cap = ANSWER_CAPS[call]
    answer = pad_to(BASE_ANSWERS[call], cap + 1)
    with (
        RawBot(endpoint, **{call: lambda request: answer}),
        pytest.raises(BotProtocolError) as caught,
    ):
        make_call(client, call)
    if cap == wire.MAX_ANSWER_BYTES:
        assert f"{call} failed: RESOURCE_EXHAUSTED" in caught.value.reason
        assert f"larger than max ({cap + 1} vs. {cap})" in caught.value.reason
    else:
        assert (
            f"{call}: an answer of {cap + 1} bytes is over the {cap}-byte cap for {call} answers"
            == caught.value.reason
        )
    assert "padder" == caught.value.bot


def test_a_health_answer_over_its_cap_is_not_serving(endpoint: str, client: BotClient) -> None:
    """A health answer one byte over its 1 KiB cap counts as not SERVING (the bot is not ready)."""
    answer = pad_to(SERVING.SerializeToString(), ANSWER_CAPS["Health.Check"] + 1)
    with RawBot(endpoint, **{"Health.Check": lambda request: answer}):
        assert not client.health(timeout=10)


def test_an_answer_over_the_largest_cap_is_refused_by_grpc(
    endpoint: str, client: BotClient
) -> None:
    """Over 16 KiB, gRPC itself refuses the answer as it arrives: RESOURCE_EXHAUSTED."""
    answer = pad_to(DECIDE, wire.MAX_ANSWER_BYTES + 1)
    with (
        RawBot(endpoint, Decide=lambda request: answer),
        pytest.raises(BotProtocolError, match="Decide failed: RESOURCE_EXHAUSTED"),
    ):
        ask(client)


def test_a_long_note_is_cut_but_must_fit_the_cap(endpoint: str, client: BotClient) -> None:
    """A 10 KB note is cut to 1024 bytes; a 17 KB note makes the answer too big to read."""
    long_note = pb.DecideResponse(
        actions=[pb.Action(kind=pb.ACTION_KIND_DRAW_STOCK)], note="n" * 10_000
    ).SerializeToString()
    too_long = pb.DecideResponse(
        actions=[pb.Action(kind=pb.ACTION_KIND_DRAW_STOCK)], note="n" * 17_000
    ).SerializeToString()
    state = MatchState(MatchConfig(seats=3), 0, dealer=2)
    with RawBot(endpoint, Decide=lambda request: long_note):
        decision = client.decide(
            "m",
            state.observation(0),
            state.legal_actions(),
            time_left_ms=1,
            time_bank_ms=0,
            timeout=10,
        )
    assert ("n" * 1024, 10_000) == (decision.note, decision.note_bytes)
    with (
        RawBot(endpoint, Decide=lambda request: too_long),
        pytest.raises(BotProtocolError, match="RESOURCE_EXHAUSTED"),
    ):
        ask(client)


def test_the_sdk_bot_refuses_a_request_over_its_cap(endpoint: str) -> None:
    """The bot's side keeps its own cap: a request over 4 MiB is refused, not read."""
    with BotServer(Bot(), endpoint, seat_token=""), grpc.insecure_channel(endpoint) as channel:
        decide: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            "/flipflop.v1.Bot/Decide", request_serializer=None, response_deserializer=None
        )
        with pytest.raises(grpc.RpcError) as caught:
            decide(padding(wire.MAX_REQUEST_BYTES + 1), timeout=10)
    error = cast(grpc.Call, caught.value)  # a failed unary call's error is also its Call
    assert grpc.StatusCode.RESOURCE_EXHAUSTED == error.code()


def test_the_request_cap_is_far_above_a_long_match() -> None:
    """A DecideRequest with 2000 turns of history (ten times the default turn cap) is small.

    Measured: about 22 bytes per turn; 4 MiB leaves room for turn caps near 190 000.
    """
    # Everyone takes the discard and discards another card: the stock never runs out, so the
    # hand lasts until the turn cap.
    state = MatchState(MatchConfig(seats=5, hand_cap=1, turn_cap=2000), 3)
    biggest = 0
    while not state.is_over:
        legal = state.legal_actions()
        data = wire.decide_request_bytes("a" * 36, state.observation(state.to_act), legal, 1, 1)
        biggest = max(biggest, len(data))
        wanted = ActionKind.DRAW_DISCARD if state.phase is Phase.START else ActionKind.DISCARD
        state.apply(next((a for a in legal if a.kind is wanted), legal[-1]))
    assert Termination.TURN_CAP is state.results[0].termination
    assert 20_000 < biggest < wire.MAX_REQUEST_BYTES // 40


# ---------------------------------------------------------------------------------- padding


def test_a_4mb_padded_answer_is_refused_and_caches_nothing(
    endpoint: str, client: BotClient
) -> None:
    """Issue 9: a legal draw padded with 4 MB of unknown fields is a protocol error.

    gRPC refuses it before anything decodes it, so no cache grows by a byte.
    """
    answer = padded_action(DRAW_BODY, FOUR_MB)
    before = cached_key_bytes()
    with (
        RawBot(endpoint, Decide=lambda request: answer),
        pytest.raises(BotProtocolError, match="RESOURCE_EXHAUSTED"),
    ):
        ask(client)
    assert before == cached_key_bytes()


def test_padded_answers_under_the_cap_are_read_but_never_cached(
    endpoint: str, client: BotClient
) -> None:
    """Issue 9: 200 legal draws, each padded differently to just under the cap, are all read.

    None is kept by its raw bytes: the caches' keys do not grow (they would by 3 MB).
    """

    def answer(request: bytes) -> bytes:
        return padded_action(DRAW_BODY, 16_000, fill=unique_fill())

    with RawBot(endpoint, Decide=answer):
        ask(client)  # the request's parts are cached once, as usual
        before = cached_key_bytes()
        answers = [ask(client) for _ in range(200)]
    assert [[DRAW_STOCK]] * 200 == answers
    assert before == cached_key_bytes()
    longest = max((len(k) for c in (wire._ACTION_CACHE, wire._EVENT_CACHE) for k in c), default=0)
    assert longest <= wire.CACHE_KEY_BYTES


def test_padded_answers_do_not_grow_python_memory(endpoint: str, client: BotClient) -> None:
    """Issue 9: 200 distinct padded answers under the cap leave Python's memory flat.

    tracemalloc counts what stays allocated: kept answers would be over 3 MB.
    """

    def answer(request: bytes) -> bytes:
        return padded_action(DRAW_BODY, 16_000, fill=unique_fill())

    with RawBot(endpoint, Decide=answer):
        for _ in range(20):  # warm up: gRPC's and the caches' steady state
            ask(client)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(200):
                ask(client)
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert grown < 1024 * 1024, f"{grown} bytes more after 200 padded answers"


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_4mb_padded_answers_do_not_grow_the_arena(endpoint: str, client: BotClient) -> None:
    """Issue 9: 200 answers padded with 4 MB each (800 MB in all) leave the memory flat.

    Each is a different answer and a protocol error; the resident memory grows by less than
    64 MB (a generous margin: keeping them would take 800 MB).
    """

    def answer(request: bytes) -> bytes:
        return padded_action(DRAW_BODY, FOUR_MB, fill=unique_fill())

    with RawBot(endpoint, Decide=answer) as bot:
        for _ in range(10):
            with pytest.raises(BotProtocolError):
                ask(client)
        before = resident_bytes()
        for _ in range(200):
            with pytest.raises(BotProtocolError, match="RESOURCE_EXHAUSTED"):
                ask(client)
        grown = resident_bytes() - before
    assert 210 == bot.calls.count("Decide")
    assert grown < 64 * 1024 * 1024, f"{grown / 2**20:.0f} MB more after 200 padded answers"


# ---------------------------------------------------------------------------------- handshake


def test_a_3mb_version_string_is_refused_by_size(endpoint: str, client: BotClient) -> None:
    """Issue 9: a 3 MB handshake version string is refused by the size cap before decoding.

    The error does not echo it, and the client learns no identity to record.
    """
    answer = pb.HandshakeResponse(
        protocol_version=PROTOCOL_VERSION, name="padder", version="v" * (3 * 1024 * 1024)
    ).SerializeToString()
    with (
        RawBot(endpoint, Handshake=lambda request: answer),
        pytest.raises(BotProtocolError, match="Handshake failed: RESOURCE_EXHAUSTED") as caught,
    ):
        client.handshake(timeout=10)
    assert len(str(caught.value)) < 300
    assert client.identity is None


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"name": "evil\x1b[2J"}, r"name 'evil\\x1b\[2J' holds the control character U\+001B"),
        ({"name": "two\nlines"}, "name 'two\\\\nlines' holds the control character U\\+000A"),
        ({"version": "1.0\u202egnp.exe"}, "version .* holds the control character U\\+202E"),
        ({"runtime": "py\u200b3"}, "runtime .* holds the control character U\\+200B"),
        ({"features": ["ok", "bad\x00"]}, "features\\[1\\] .* U\\+0000"),
        ({"name": "n" * 65}, "name 'n{40}'… \\(65 characters\\) is over the limit of 64"),
        ({"version": "v" * 65}, "version .* is over the limit of 64 characters"),
        ({"runtime": "r" * 129}, "runtime .* is over the limit of 128 characters"),
        ({"features": ["f"] * 17}, "17 features, over the limit of 16"),
        ({"features": ["f" * 65]}, "features\\[0\\] .* is over the limit of 64 characters"),
        ({"protocol_version": "1.1 "}, "protocol_version '1.1 ' is not MAJOR.MINOR"),
        ({"protocol_version": "\u0661.\u0661"}, "protocol_version .* is not MAJOR.MINOR"),
    ],
)
def test_bad_handshake_strings_are_refused_over_the_wire(
    endpoint: str, client: BotClient, fields: dict[str, Any], reason: str
) -> None:
    """Control characters (ESC, newline, bidi override, zero width) and over-long strings.

    Issue 9: bot-supplied strings reach terminals, logs and standings; each field is named.
    """
    values: dict[str, Any] = {"protocol_version": PROTOCOL_VERSION, "name": "ok", **fields}
    answer = pb.HandshakeResponse(**values).SerializeToString()
    with (
        RawBot(endpoint, Handshake=lambda request: answer),
        pytest.raises(BotProtocolError, match=reason),
    ):
        client.handshake(timeout=10)
    assert client.identity is None
