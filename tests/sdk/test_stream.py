"""Decisions on a stream (protocol 1.2): ``DecideStream``, over a real unix socket.

The SDK's server announces ``decide-stream``; after a handshake the client then asks for a
match's decisions on one stream. Most servers here count the calls that reach them (the
``hosted`` fixture), which proves which method answered.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from flipflop import (
    DRAW_STOCK,
    SEAT_TOKEN_ENV,
    Action,
    Bot,
    BotClient,
    BotCrashed,
    BotProtocolError,
    BotServer,
    BotTimeout,
    Decision,
    MatchConfig,
    MatchInfo,
    MatchState,
    Observation,
    Phase,
    SeatTokenError,
    _client,
    _server,
    _wire,
    check_bot,
    format_report,
    play_match,
)
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._server import _BotServicer

DECIDE = "/flipflop.v1.Bot/Decide"
DECIDE_STREAM = "/flipflop.v1.Bot/DecideStream"
UNARY_ONLY = Path(__file__).parent / "bots" / "unaryonly"
CONFIG = MatchConfig(seats=3)

Hosted = Callable[[_BotServicer], list[str]]
"""The ``hosted`` fixture (conftest): serve a servicer; the methods of the calls it gets."""


@contextmanager
def connected(endpoint: str, **options: Any) -> Iterator[BotClient]:
    """A client of ``endpoint`` that has shaken hands."""
    with BotClient(endpoint, **options) as client:
        client.wait_ready(5)
        client.handshake(timeout=5)
        yield client


def started(client: BotClient, match_id: str = "m") -> MatchState:
    """Start ``match_id`` with the bot in seat 0, at its first decision (PHASE_START)."""
    client.start_match(MatchInfo(match_id, 0, ("p0", "p1", "p2"), CONFIG, 1000, 5000))
    return MatchState(CONFIG, 0, dealer=2)


def ask(client: BotClient, state: MatchState, match_id: str = "m", timeout: float = 5) -> Decision:
    """Ask for the decision of seat 0 in ``state``."""
    return client.decide(
        match_id,
        state.observation(0),
        state.legal_actions(),
        time_left_ms=round(timeout * 1000),
        time_bank_ms=0,
        timeout=timeout,
    )


def play_turn(client: BotClient, state: MatchState, match_id: str = "m") -> None:
    """Ask seat 0 for both decisions of its turn (start, play) and apply them."""
    state.apply(ask(client, state, match_id).actions[0])
    for action in ask(client, state, match_id).actions:
        state.apply(action)


# ---------------------------------------------------------------------------------- which way


def test_a_bot_that_announces_decide_stream_gets_one_stream_per_match(
    endpoint: str, hosted: Hosted
) -> None:
    """After the handshake, every decision of a match travels on one DecideStream call."""
    methods = hosted(_BotServicer(Bot()))
    with connected(endpoint) as client:
        state = started(client)
        play_turn(client, state)
        play_turn(client, state)
        assert client.streams_decisions
        assert (1, 0) == (methods.count(DECIDE_STREAM), methods.count(DECIDE))


class Unannounced(_BotServicer):
    """The SDK's servicer, but its handshake does not announce decide-stream (a 1.1 bot)."""

    def Handshake(
        self, request: pb.HandshakeRequest, context: grpc.ServicerContext
    ) -> pb.HandshakeResponse:
        """The SDK's handshake without the feature."""
        answer = super().Handshake(request, context)
        answer.protocol_version = "1.1"
        answer.features.remove(_wire.DECIDE_STREAM)
        return answer


def test_a_bot_without_the_feature_is_asked_with_decide(endpoint: str, hosted: Hosted) -> None:
    """A handshake without decide-stream: one Decide call per decision, no stream."""
    methods = hosted(Unannounced(Bot()))
    with connected(endpoint) as client:
        state = started(client)
        play_turn(client, state)
        assert not client.streams_decisions
        assert (0, 2) == (methods.count(DECIDE_STREAM), methods.count(DECIDE))


class Unimplemented(_BotServicer):
    """A bot that announces decide-stream but does not serve it."""

    def DecideStream(
        self, requests: Iterator[bytes], context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        """What a server without the method answers."""
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")


def test_a_bot_that_does_not_serve_its_stream_is_asked_with_decide(
    endpoint: str, hosted: Hosted
) -> None:
    """UNIMPLEMENTED on DecideStream is no error: that decision and the next go by Decide."""
    methods = hosted(Unimplemented(Bot()))
    with connected(endpoint) as client:
        announced = client.streams_decisions
        state = started(client)
        play_turn(client, state)
        assert (True, False) == (announced, client.streams_decisions)
        assert (1, 2) == (methods.count(DECIDE_STREAM), methods.count(DECIDE))


def start_unary_only(tmp_path: Path, token: str) -> tuple[subprocess.Popen[str], str]:
    """Start the unary-only bot (no SDK server) as the sandbox would; return it and its endpoint."""
    endpoint = f"unix:{tmp_path / 'unaryonly.sock'}"
    bot = subprocess.Popen(
        [sys.executable, str(UNARY_ONLY / "bot.py"), "--listen", endpoint],
        cwd=UNARY_ONLY,
        env={**os.environ, SEAT_TOKEN_ENV: token},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert bot.stdout is not None
    assert f"serving unaryonly on {endpoint}\n" == bot.stdout.readline()
    return bot, endpoint


def test_the_unary_only_bot_plays_a_match_with_decide(tmp_path: Path) -> None:
    """A 1.1 bot written on grpcio alone shows its seat token and plays a whole match legally."""
    bot, endpoint = start_unary_only(tmp_path, "its-token")
    try:
        with BotClient(endpoint) as client:
            client.wait_ready(10)
            identity = client.handshake(timeout=5, seat_token="its-token")
            assert ("unaryonly", "1.1") == (identity.name, identity.protocol_version)
            assert not client.streams_decisions
            state = started(client)
            while not state.is_over:
                if state.to_act == 0:
                    play_turn(client, state)
                else:
                    state.apply(state.legal_actions()[-1])
        bot.send_signal(signal.SIGTERM)
        assert 0 == bot.wait(10)
    finally:
        bot.kill()


def test_the_check_says_how_decisions_were_asked(
    endpoint: str, tmp_path: Path, hosted: Hosted
) -> None:
    """``check_bot`` streams when the bot announces it, and reports one that does not serve it."""
    with BotServer(Bot(), endpoint):
        streamed = check_bot(endpoint, matches=3, seed=1)
    hosted(Unimplemented(Bot()))
    broken = check_bot(endpoint, matches=3, seed=1)
    bot, unary_endpoint = start_unary_only(tmp_path, "t")
    try:
        unary = check_bot(unary_endpoint, matches=3, seed=1, seat_token="t")
    finally:
        bot.kill()
    assert (True, True) == (streamed.ok, streamed.decide_stream), format_report(streamed)
    assert (True, False) == (unary.ok, unary.decide_stream), format_report(unary)
    assert "decisions (on DecideStream)" in format_report(streamed)
    assert "decisions (with Decide)" in format_report(unary)
    assert not broken.decide_stream
    assert [("decide-stream", "error")] == [(p.where, p.what.value) for p in broken.problems]


# ---------------------------------------------------------------------------------- faults


class Late(Bot):
    """Sleeps through its first decision (1 s), then answers at once."""

    name = "late"

    def __init__(self) -> None:
        self.decisions = 0

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Late the first time."""
        self.decisions += 1
        if self.decisions == 1:
            time.sleep(1.0)
        return DRAW_STOCK


def test_a_late_decision_times_out_and_the_next_gets_a_fresh_stream(
    endpoint: str, hosted: Hosted
) -> None:
    """The deadline of one decision holds on a stream; the stream is then replaced."""
    methods = hosted(_BotServicer(Late()))
    with connected(endpoint) as client:
        state = started(client)
        begun = time.monotonic()
        with pytest.raises(BotTimeout, match="Decide: no answer before the deadline"):
            ask(client, state, timeout=0.2)
        assert time.monotonic() - begun < 0.8
        assert [DRAW_STOCK] == ask(client, state).actions
        assert 2 == methods.count(DECIDE_STREAM)


class RaisesOnce(Bot):
    """Raises on its first play_turn, plays as the default bot after that."""

    name = "raises-once"

    def __init__(self) -> None:
        self.raised = False

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Fail once."""
        if not self.raised:
            self.raised = True
            raise ValueError("no idea what to discard")
        return super().play_turn(obs, legal)


def test_a_bot_that_raises_on_a_stream_fails_as_with_decide(endpoint: str) -> None:
    """The same error as for Decide, and the match's next decision opens a new stream."""
    reasons = []
    for stream in (False, True):
        with BotServer(RaisesOnce(), endpoint), BotClient(endpoint) as client:
            if stream:
                client.handshake(timeout=5)
            state = started(client)
            state.apply(ask(client, state).actions[0])
            with pytest.raises(BotProtocolError) as caught:
                ask(client, state)
            reasons.append(caught.value.reason)
            assert 1 == len(ask(client, state).actions)
    assert (
        "Decide failed: INTERNAL: play_turn raised ValueError: no idea what to discard"
        == (reasons[0])
    )
    assert reasons[0] == reasons[1]


SLEEPS_ON_SECOND = """\
import time

from flipflop import DRAW_STOCK, Bot, serve


class Sleepy(Bot):
    name = "sleepy"
    decisions = 0

    def start_turn(self, obs, legal):
        self.decisions += 1
        if self.decisions == 2:
            time.sleep(30)
        return DRAW_STOCK


serve(Sleepy())
"""


def test_a_bot_killed_mid_stream_is_a_crash(tmp_path: Path) -> None:
    """The bot process dies while a decision is asked on its open stream: BotCrashed, at once."""
    script = tmp_path / "sleepy.py"
    script.write_text(SLEEPS_ON_SECOND)
    endpoint = f"unix:{tmp_path / 'sleepy.sock'}"
    bot = subprocess.Popen(
        [sys.executable, str(script), "--listen", endpoint], stdout=subprocess.PIPE, text=True
    )
    try:
        assert bot.stdout is not None
        assert f"serving sleepy on {endpoint}\n" == bot.stdout.readline()
        with connected(endpoint) as client:
            state = started(client)
            assert [DRAW_STOCK] == ask(client, state).actions  # the stream is open
            threading.Timer(0.3, bot.kill).start()
            begun = time.monotonic()
            with pytest.raises(BotCrashed, match="Decide failed"):
                ask(client, state, timeout=20)
            assert time.monotonic() - begun < 5
    finally:
        bot.kill()
        bot.wait(10)


class Verbose(Bot):
    """Plans 5000 copies of its first legal step: an answer of about 20 KB."""

    name = "verbose"

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Far too many steps."""
        return [legal[0]] * 5000


def test_an_answer_over_the_cap_on_a_stream_is_refused_undecoded(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the 16 KiB cap (gRPC's limit raised to let it through): refused before decoding."""
    decoded: list[bytes] = []
    decode = _wire.decision_from_bytes

    def spy(data: bytes) -> Decision:
        decoded.append(data)
        return decode(data)

    monkeypatch.setattr(_wire, "decision_from_bytes", spy)
    with BotServer(Verbose(), endpoint), connected(endpoint, max_message_bytes=1 << 20) as client:
        state = started(client)
        state.apply(ask(client, state).actions[0])
        decoded.clear()
        with pytest.raises(BotProtocolError, match=r"over the 16384-byte cap for Decide answers"):
            ask(client, state)
        assert [] == decoded


def test_an_answer_over_grpcs_limit_on_a_stream_is_a_protocol_error(endpoint: str) -> None:
    """The receive limit of gRPC itself refuses it as it arrives, as for Decide."""
    with BotServer(Verbose(), endpoint), connected(endpoint) as client:
        state = started(client)
        state.apply(ask(client, state).actions[0])
        with pytest.raises(BotProtocolError, match="Decide failed: RESOURCE_EXHAUSTED"):
            ask(client, state)


def test_a_refused_seat_token_opens_no_stream(endpoint: str, hosted: Hosted) -> None:
    """A client that refused the bot's seat token opens no stream, even for a streaming bot."""
    methods = hosted(_BotServicer(Bot(), "the bot's token"))
    with connected(endpoint) as client:  # unchecked: the bot streams
        assert client.streams_decisions
        with pytest.raises(SeatTokenError):
            client.handshake(timeout=5, seat_token="the seat's token")
        with pytest.raises(SeatTokenError):
            ask(client, MatchState(CONFIG, 0, dealer=2))
    assert 0 == methods.count(DECIDE_STREAM)


# ---------------------------------------------------------------------------------- matches


class Rendezvous(Bot):
    """Answers only once the decisions of two matches are in it at the same time."""

    name = "rendezvous"

    def __init__(self) -> None:
        self.both = threading.Barrier(2, timeout=5)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Wait for the other match's decision (the barrier breaks after 5 s alone)."""
        self.both.wait()
        return DRAW_STOCK


def test_two_matches_stream_at_once_on_one_client(endpoint: str, hosted: Hosted) -> None:
    """Decisions of two matches are in flight together, each on its own stream."""
    answers: queue.SimpleQueue[object] = queue.SimpleQueue()
    methods = hosted(_BotServicer(Rendezvous()))
    with connected(endpoint) as client:

        def play(match_id: str) -> None:
            state = started(client, match_id)
            for _ in range(3):
                try:
                    answers.put(ask(client, state, match_id).actions)
                except BotProtocolError as e:
                    answers.put(e)

        threads = [threading.Thread(target=play, args=(f"match{i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert 2 == methods.count(DECIDE_STREAM)
    assert [[DRAW_STOCK]] * 6 == [answers.get_nowait() for _ in range(6)]


def test_a_whole_match_over_streams_equals_the_match_in_process(endpoint: str) -> None:
    """Every seat is the served bot, each on its own stream: the same play as in-process."""
    config = MatchConfig(seats=4, hand_cap=6)
    state = MatchState(config, 7)
    with BotServer(Bot(), endpoint), connected(endpoint) as client:
        for seat in range(config.seats):
            client.start_match(MatchInfo(f"s{seat}", seat, ("a",) * 4, config, 1000, 5000))
        while not state.is_over:
            seat = state.to_act
            answer = client.decide(
                f"s{seat}",
                state.observation(seat),
                state.legal_actions(),
                time_left_ms=1000,
                time_bank_ms=5000,
                timeout=5,
            )
            for action in answer.actions[: 1 if state.phase is Phase.START else None]:
                state.apply(action)
    assert play_match([Bot() for _ in range(4)], config, 7).log == state.log


class Watched(_BotServicer):
    """The SDK's servicer, noting how each stream's requests ended and when EndMatch came."""

    def __init__(self, bot: Bot) -> None:
        super().__init__(bot)
        self.events: list[str] = []
        self.ended = threading.Event()

    def DecideStream(
        self, requests: Iterator[bytes], context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        """The SDK's stream, its requests watched."""

        def watched() -> Iterator[bytes]:
            try:
                yield from requests
                self.events.append("stream half-closed")
            except grpc.RpcError:
                self.events.append("stream cancelled")
            self.ended.set()

        return super().DecideStream(watched(), context)

    def EndMatch(
        self, request: pb.EndMatchRequest, context: grpc.ServicerContext
    ) -> pb.EndMatchResponse:
        """Note it, then end the match."""
        self.events.append("EndMatch")
        return super().EndMatch(request, context)


def test_end_match_half_closes_the_stream_first(endpoint: str, hosted: Hosted) -> None:
    """The bot sees the match's stream end cleanly, before EndMatch arrives."""
    watched = Watched(Bot())
    hosted(watched)
    with connected(endpoint) as client:
        state = started(client)
        play_turn(client, state)
        result = play_match([Bot() for _ in range(3)], MatchConfig(seats=3, hand_cap=1), 1).result
        assert result is not None
        client.end_match("m", result)
        assert watched.ended.wait(5)
    assert ["stream half-closed", "EndMatch"] == watched.events


def test_a_request_for_another_match_ends_the_stream(endpoint: str) -> None:
    """Every request on a stream must be for its first request's match: INVALID_ARGUMENT."""
    state = MatchState(CONFIG, 0, dealer=2)
    requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    with BotServer(Bot(), endpoint), grpc.insecure_channel(endpoint) as channel:
        with BotClient(endpoint) as client:
            started(client, "one")
            started(client, "two")
        open_stream = channel.stream_stream(
            DECIDE_STREAM, request_serializer=None, response_deserializer=None
        )
        call = open_stream(iter(requests.get, None))
        answers: Iterator[bytes] = iter(call)
        for match_id in ("one", "two"):
            requests.put(
                _wire.decide_request_bytes(match_id, state.observation(0), [DRAW_STOCK], 1000, 0)
            )
        assert [DRAW_STOCK] == _wire.decision_from_bytes(next(answers)).actions
        with pytest.raises(grpc.RpcError):
            next(answers)
        requests.put(None)
    assert grpc.StatusCode.INVALID_ARGUMENT == call.code()
    assert "a request for match 'two' on the stream of match 'one'" in call.details()


def test_a_stream_over_the_servers_limit_is_refused(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_DECIDE_STREAMS open streams, one more is RESOURCE_EXHAUSTED."""
    monkeypatch.setattr(_server, "MAX_DECIDE_STREAMS", 1)
    with BotServer(Bot(), endpoint), connected(endpoint) as client:
        first, second = started(client, "first"), started(client, "second")
        assert [DRAW_STOCK] == ask(client, first, "first").actions
        with pytest.raises(BotProtocolError, match="RESOURCE_EXHAUSTED: too many decision"):
            ask(client, second, "second")


def test_an_idle_client_leaves_no_deadline_thread(
    endpoint: str, hosted: Hosted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog thread ends once nothing is armed for a while.

    The next decision starts another, and the stream still answers.
    """
    monkeypatch.setattr(_client, "_WATCH_IDLE_S", 0.1)
    hosted(_BotServicer(Bot()))
    with connected(endpoint) as client:
        state = started(client)
        play_turn(client, state)
        deadline = time.monotonic() + 10
        while client._watchdog._thread is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client._watchdog._thread is None
        play_turn(client, state)  # a new thread watches this one
        assert client.streams_decisions
