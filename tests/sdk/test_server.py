"""A bot hosted by the SDK's gRPC server, driven by the SDK's client over a real unix socket."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar, cast

import grpc
import pytest

from flipflop import (
    DRAW_STOCK,
    PROTOCOL_VERSION,
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
    apply_turn,
    play_match,
)
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.flipflop.v1 import bot_pb2_grpc as pb_grpc
from flipflop._server import Endpoint, _BotServicer

Hosted = Callable[[_BotServicer], list[str]]
"""The ``hosted`` fixture (conftest): serve a servicer; the methods of the calls it gets."""


@pytest.fixture(params=["Decide", "DecideStream"])
def served(endpoint: str, request: pytest.FixtureRequest) -> Iterator[BotClient]:
    """A client connected to the default ``Bot`` served on ``endpoint``, once per way to decide.

    ``Decide``: no handshake, so one call per decision. ``DecideStream``: after a handshake
    (the SDK's server announces ``decide-stream``), one stream per match.
    """
    with BotServer(Bot(), endpoint), BotClient(endpoint) as client:
        client.wait_ready(5)
        if request.param == "DecideStream":
            client.handshake(timeout=5)
        assert (request.param == "DecideStream") == client.streams_decisions
        yield client


def info(match_id: str, seat: int, config: MatchConfig) -> MatchInfo:
    """What a bot is told at the start of a match."""
    players = tuple(f"p{s}" for s in range(config.seats))
    return MatchInfo(match_id, seat, players, config, 1000, 5000)


def play_over_grpc(client: BotClient, config: MatchConfig, seed: int, prefix: str) -> MatchState:
    """A whole match in which every seat is the served bot, asked over gRPC (the arena's loop)."""
    state = MatchState(config, seed)
    ids = [f"{prefix}-seat{s}" for s in range(config.seats)]
    for seat, match_id in enumerate(ids):
        client.start_match(info(match_id, seat, config))
    reported = 0
    while not state.is_over:
        seat = state.to_act
        actions = client.decide(
            ids[seat],
            state.observation(seat),
            state.legal_actions(),
            time_left_ms=1000,
            time_bank_ms=5000,
            timeout=5,
        ).actions
        if state.phase is Phase.START:
            assert 1 == len(actions)
            state.apply(actions[0])
        else:
            assert (len(actions), None) == apply_turn(state, actions)
        while reported < len(state.results):
            for match_id in ids:
                client.hand_ended(match_id, state.results[reported])
            reported += 1
    assert state.result is not None
    for match_id in ids:
        client.end_match(match_id, state.result)
    return state


# ---------------------------------------------------------------------------------- handshake


def test_handshake_says_who_the_bot_is(served: BotClient) -> None:
    """The handshake returns the bot's name and version, the protocol and its features."""
    identity = served.handshake(timeout=5)
    assert ("bot", "0.1.0", PROTOCOL_VERSION) == (
        identity.name,
        identity.version,
        identity.protocol_version,
    )
    assert ("concurrent-matches", "debug-notes", "decide-stream") == identity.features
    assert identity.runtime.startswith("python 3.")
    assert identity == served.identity


def test_bot_refuses_another_major_version(served: BotClient, endpoint: str) -> None:
    """An arena speaking protocol 2.x gets FAILED_PRECONDITION naming both versions."""
    with grpc.insecure_channel(endpoint) as channel, pytest.raises(grpc.RpcError) as caught:
        pb_grpc.BotStub(channel).Handshake(pb.HandshakeRequest(protocol_version="2.3"))
    error = cast(grpc.Call, caught.value)  # a failed unary call's error is also its Call
    assert grpc.StatusCode.FAILED_PRECONDITION == error.code()
    assert f"the arena speaks 2.3, this bot speaks {PROTOCOL_VERSION}" in (error.details() or "")


def test_bot_accepts_another_minor_version(served: BotClient, endpoint: str) -> None:
    """Only the major version must match: 1.7 is fine."""
    with grpc.insecure_channel(endpoint) as channel:
        answer = pb_grpc.BotStub(channel).Handshake(pb.HandshakeRequest(protocol_version="1.7"))
    assert PROTOCOL_VERSION == answer.protocol_version


class FutureBot(_BotServicer):
    """A bot that speaks protocol 2.0."""

    def Handshake(
        self, request: pb.HandshakeRequest, context: grpc.ServicerContext
    ) -> pb.HandshakeResponse:
        """Answer as a 2.0 bot."""
        return pb.HandshakeResponse(protocol_version="2.0", name="future", version="9")


def test_arena_refuses_a_bot_of_another_major_version(endpoint: str, hosted: Hosted) -> None:
    """The client refuses a bot that answers with protocol 2.0, naming both versions."""
    both = rf"the bot speaks 2\.0, the arena speaks {re.escape(PROTOCOL_VERSION)}"
    hosted(FutureBot(Bot()))
    with (
        BotClient(endpoint) as client,
        pytest.raises(BotProtocolError, match=both) as e,
    ):
        client.handshake(timeout=5)
    assert "future" == e.value.bot


# ---------------------------------------------------------------------------------- seat token


def every_call(client: BotClient) -> list[Callable[[], object]]:
    """One of each call a client can make (the match is nonsense: none may be sent)."""
    config = MatchConfig(seats=3, hand_cap=1)
    state = MatchState(config, 1)
    obs, legal = state.observation(state.to_act), state.legal_actions()
    return [
        lambda: client.handshake(timeout=5),
        lambda: client.handshake(timeout=5, seat_token="another try"),
        lambda: client.health(timeout=5),
        lambda: client.wait_ready(5),
        lambda: client.start_match(info("m", 0, config)),
        lambda: client.decide("m", obs, legal, time_left_ms=1000, time_bank_ms=0, timeout=5),
    ]


def test_the_server_presents_the_seat_token_of_its_environment(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BotServer takes FLIPFLOP_SEAT_TOKEN, removes it from the environment, presents it."""
    token = secrets.token_urlsafe(32)
    monkeypatch.setenv(SEAT_TOKEN_ENV, token)
    with BotServer(Bot(), endpoint), BotClient(endpoint) as client:
        assert SEAT_TOKEN_ENV not in os.environ
        client.wait_ready(5)
        assert "bot" == client.handshake(timeout=5, seat_token=token).name
        client.start_match(info("m", 0, MatchConfig(seats=3)))  # the client stays usable
        with grpc.insecure_channel(endpoint) as channel:
            answer = pb_grpc.BotStub(channel).Handshake(pb.HandshakeRequest(protocol_version="1.1"))
    assert token == answer.seat_token


def test_a_wrong_seat_token_is_refused_and_nothing_more_reaches_the_bot(
    endpoint: str, hosted: Hosted
) -> None:
    """Issue 9, seat takeover: the arena dials a seat's endpoint and another bot answers.

    Its handshake carries its own token, not the seat's: SeatTokenError. After that the
    client sends nothing more to that endpoint (the bot counts every call it gets), and every
    call raises the same error. Neither token appears in any error.
    """
    seat, victim = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    methods = hosted(_BotServicer(Bot(), victim))
    with BotClient(endpoint, name="attacker") as client:
        client.wait_ready(5)
        with pytest.raises(SeatTokenError, match="presented a wrong seat token") as caught:
            client.handshake(timeout=5, seat_token=seat)
        reached = list(methods)
        errors: list[BaseException] = [caught.value]
        for call in every_call(client):
            with pytest.raises(SeatTokenError) as again:
                call()
            errors.append(again.value)
        assert reached == methods
    assert ["/grpc.health.v1.Health/Check", "/flipflop.v1.Bot/Handshake"] == reached
    assert {caught.value.reason} == {getattr(e, "reason", None) for e in errors}
    assert "attacker" == caught.value.bot
    assert client.identity is None
    for error in errors:
        text = f"{error} {error!r} {error.args} {error.__reduce__()}"
        assert seat not in text and victim not in text


def test_a_bot_without_a_seat_token_is_refused(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bot served without FLIPFLOP_SEAT_TOKEN presents none: SeatTokenError, when checked."""
    monkeypatch.delenv(SEAT_TOKEN_ENV, raising=False)
    with (
        BotServer(Bot(), endpoint),
        BotClient(endpoint) as client,
        pytest.raises(SeatTokenError, match="presented no seat token") as caught,
    ):
        client.wait_ready(5)
        client.handshake(timeout=5, seat_token="the seat's token")
    assert "the seat's token" not in str(caught.value)
    assert isinstance(caught.value, BotProtocolError)  # the runner's `start` fault


def test_no_seat_token_is_checked_unless_one_is_given(endpoint: str, hosted: Hosted) -> None:
    """``seat_token=None`` (an endpoint the caller did not start): any token, or none, passes."""
    hosted(_BotServicer(Bot(), "whatever"))
    with BotClient(endpoint) as client:
        client.wait_ready(5)
        assert "bot" == client.handshake(timeout=5).name
    with pytest.raises(ValueError, match="seat_token is empty"):
        client.handshake(timeout=5, seat_token="")


LEAKY = """\
import os
import subprocess
import sys

from flipflop import DRAW_STOCK, Bot, serve

CHILD = "import os; print(os.environ.get('FLIPFLOP_SEAT_TOKEN', 'absent'))"


class Leaky(Bot):
    name = "leaky"

    def start_turn(self, obs, legal):
        child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
        mine = os.environ.get("FLIPFLOP_SEAT_TOKEN", "absent")
        return DRAW_STOCK, f"{mine} {child.stdout.strip()} {dict(os.environ)}"


serve(Leaky())
"""


def serve_script(
    tmp_path: Path, source: str, name: str, env: dict[str, str]
) -> tuple[subprocess.Popen[str], Path]:
    """Run ``source`` as a bot script with ``--listen`` in ``tmp_path``; return once it serves.

    Checks the one line ``serve`` prints once it listens (``serving NAME on unix:PATH``).
    """
    script = tmp_path / "bot.py"
    script.write_text(source)
    sock = tmp_path / "s.sock"
    process = subprocess.Popen(
        [sys.executable, str(script), "--listen", f"unix:{sock}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if f"serving {name} on unix:{sock}\n" != line:
        process.kill()
        raise AssertionError(f"the script did not serve: {line!r} {process.communicate()[1]}")
    return process, sock


def test_serve_hides_the_seat_token_from_the_bot(tmp_path: Path) -> None:
    """``serve`` presents the token, but the bot's code, its notes and its children never see it.

    A bot that dumps its environment into a debug note (which ends up in the replay) cannot
    leak its seat token.
    """
    token = secrets.token_urlsafe(32)
    process, sock = serve_script(tmp_path, LEAKY, "leaky", {**os.environ, SEAT_TOKEN_ENV: token})
    try:
        with BotClient(f"unix:{sock}") as client:
            assert "leaky" == client.handshake(timeout=5, seat_token=token).name
            decision = start_and_ask(client, Phase.START, timeout=30)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    finally:
        process.kill()
    assert decision.note.startswith("absent absent {"), decision.note
    assert token not in decision.note
    assert token not in err


# ---------------------------------------------------------------------------------- health


def test_health_check_answers_for_the_bot_service_only(served: BotClient) -> None:
    """SERVING for "" and "flipflop.v1.Bot"; any other service is not found."""
    assert (True, True, False) == (
        served.health(service=""),
        served.health(service="flipflop.v1.Bot"),
        served.health(service="nope.v1.Other"),
    )


def test_a_stopped_bot_is_a_crash(endpoint: str) -> None:
    """Once the server is gone, calls fail as BotCrashed, not as a hang or a protocol error."""
    server = BotServer(Bot(), endpoint)
    server.start()
    with BotClient(endpoint) as client:
        client.wait_ready(5)
        server.stop()
        with pytest.raises(BotCrashed):
            client.health(timeout=2)
    assert not Path(endpoint.removeprefix("unix:")).exists()


# ---------------------------------------------------------------------------------- matches


@pytest.mark.parametrize(("seats", "seed"), [(3, 1), (4, 2), (5, 3)])
def test_a_match_over_grpc_equals_the_match_in_process(
    served: BotClient, seats: int, seed: int
) -> None:
    """The default bot plays the same actions and placements over the wire as in-process."""
    config = MatchConfig(seats=seats, hand_cap=12)
    over_grpc = play_over_grpc(served, config, seed, "m")
    in_process = play_match([Bot() for _ in range(seats)], config, seed)
    assert in_process.log == over_grpc.log
    assert in_process.result == over_grpc.result


def test_two_matches_at_once_on_one_server(served: BotClient) -> None:
    """Two matches played from two threads against one bot process keep apart by match id."""
    configs = [MatchConfig(seats=3, hand_cap=8), MatchConfig(seats=5, hand_cap=8)]
    results: dict[int, MatchState] = {}

    def play(i: int) -> None:
        results[i] = play_over_grpc(served, configs[i], 10 + i, f"match{i}")

    threads = [threading.Thread(target=play, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i, config in enumerate(configs):
        expected = play_match([Bot() for _ in range(config.seats)], config, 10 + i)
        assert expected.log == results[i].log


def test_a_match_id_is_forgotten_at_its_end(served: BotClient) -> None:
    """After EndMatch, a decision for that match is refused as an unknown match."""
    config = MatchConfig(seats=3, hand_cap=1)
    state = play_over_grpc(served, config, 4, "done")
    with pytest.raises(BotProtocolError, match="unknown match 'done-seat0'"):
        served.decide(
            "done-seat0",
            state.observation(0),
            [DRAW_STOCK],
            time_left_ms=1,
            time_bank_ms=1,
            timeout=5,
        )


def test_unknown_match_id_is_refused(served: BotClient) -> None:
    """A decision for a match that never started is a protocol error naming the match."""
    state = MatchState(MatchConfig(seats=3), 0)
    with pytest.raises(BotProtocolError, match="FAILED_PRECONDITION: unknown match 'nope'"):
        served.decide(
            "nope",
            state.observation(state.to_act),
            state.legal_actions(),
            time_left_ms=1,
            time_bank_ms=1,
            timeout=5,
        )


def test_a_started_match_cannot_start_again(served: BotClient) -> None:
    """A second StartMatch with the same id is refused: ids are unique per match."""
    served.start_match(info("twice", 0, MatchConfig(seats=3)))
    with pytest.raises(BotProtocolError, match="ALREADY_EXISTS"):
        served.start_match(info("twice", 1, MatchConfig(seats=3)))


# ---------------------------------------------------------------------------------- bot faults


class Raiser(Bot):
    """A bot whose play_turn raises."""

    name = "raiser"

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Fail."""
        raise ValueError("no idea what to discard")


class Sleeper(Bot):
    """A bot that thinks too long before starting a turn."""

    name = "sleeper"

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Sleep past any reasonable deadline."""
        time.sleep(1.0)
        return DRAW_STOCK


class Chatty(Bot):
    """A bot that explains itself, and answers with long plans when asked to play."""

    name = "chatty"

    def start_turn(  # type: ignore[override]
        self, obs: Observation, legal: Sequence[Action]
    ) -> tuple[Action, str]:
        """Draw, with a note."""
        return DRAW_STOCK, f"turn {obs.turn}: drawing, héhé"

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """A plan far longer than any turn: 400 copies of the first legal step."""
        return [legal[0]] * 400


def start_and_ask(client: BotClient, phase: Phase, timeout: float = 5) -> Decision:
    """Start a match for seat 0 and ask for one decision in ``phase``."""
    config = MatchConfig(seats=3)
    state = MatchState(config, 0, dealer=2)
    client.start_match(info("m", 0, config))
    if phase is Phase.PLAY:
        state.apply(DRAW_STOCK)
    return client.decide(
        "m",
        state.observation(0),
        state.legal_actions(),
        time_left_ms=round(timeout * 1000),
        time_bank_ms=0,
        timeout=timeout,
    )


def test_a_bot_that_raises_is_a_protocol_error_with_the_reason(endpoint: str) -> None:
    """The bot's exception text reaches the arena; the server keeps serving."""
    with BotServer(Raiser(), endpoint), BotClient(endpoint, name="raiser") as client:
        with pytest.raises(BotProtocolError) as e:
            start_and_ask(client, Phase.PLAY)
        assert "INTERNAL: play_turn raised ValueError: no idea what to discard" in str(e.value)
        assert "raiser" == e.value.bot
        assert client.health()


def test_a_slow_bot_is_a_timeout(endpoint: str) -> None:
    """No answer before the deadline is a BotTimeout."""
    with (
        BotServer(Sleeper(), endpoint),
        BotClient(endpoint) as client,
        pytest.raises(BotTimeout),
    ):
        start_and_ask(client, Phase.START, timeout=0.2)


class _LateProxy:
    """A unix socket in front of ``back`` that holds each connection ``delay_s`` first.

    So the server's first bytes (its HTTP/2 SETTINGS frame) reach the client late, as a
    bot's do on a loaded machine.
    """

    def __init__(self, front: Path, back: str, delay_s: float) -> None:
        self.back = back
        self.delay_s = delay_s
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(str(front))
        self.listener.listen(8)
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.listener.accept()
                time.sleep(self.delay_s)
                upstream = socket.socket(socket.AF_UNIX)
                upstream.connect(self.back)
                self.sockets += [conn, upstream]
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        for s in self.sockets:
            s.close()


def test_a_bot_whose_first_bytes_come_late_is_not_a_crash(endpoint: str, tmp_path: Path) -> None:
    """A first call waits for a slow connection until its own deadline, not 50 ms.

    gRPC gives a connection ``grpc.min_reconnect_backoff_ms`` to send its SETTINGS frame; the
    client set it to 50 ms for quick reconnects, so a handshake on a loaded machine failed at
    once as ``BotCrashed`` ("connection attempt timed out before receiving SETTINGS frame",
    after 0.11 s of a 10 s deadline; a 4-worker rehearsal of CI failed test_limits on it).
    """
    proxy = _LateProxy(tmp_path / "late.sock", endpoint.removeprefix("unix:"), delay_s=1.0)
    try:
        with BotServer(Bot(), endpoint), BotClient(f"unix:{tmp_path / 'late.sock'}") as client:
            assert PROTOCOL_VERSION == client.handshake(timeout=30).protocol_version
    finally:
        proxy.close()


def test_notes_travel_with_the_answer(endpoint: str) -> None:
    """A (action, note) answer reaches the arena with its note."""
    with BotServer(Chatty(), endpoint), BotClient(endpoint) as client:
        decision = start_and_ask(client, Phase.START)
        assert ([DRAW_STOCK], "turn 0: drawing, héhé") == (decision.actions, decision.note)


def test_an_oversized_answer_is_a_protocol_error(endpoint: str) -> None:
    """An answer over the client's message limit is refused at once as a protocol error."""
    with (
        BotServer(Chatty(), endpoint),
        BotClient(endpoint, max_message_bytes=1000) as client,
        pytest.raises(BotProtocolError, match="RESOURCE_EXHAUSTED"),
    ):
        start_and_ask(client, Phase.PLAY)


# ---------------------------------------------------------------------------------- endpoints


def test_endpoints_parse() -> None:
    """unix:/abs/path and host:port are endpoints; anything else is refused with a reason."""
    assert Path("/tmp/b.sock") == Endpoint.parse("unix:/tmp/b.sock").path
    assert Path("/tmp/b.sock") == Endpoint.parse("unix:///tmp/b.sock").path
    assert ("127.0.0.1", 0) == (Endpoint.parse("127.0.0.1:0").host, 0)
    assert "[::1]:50051" == str(Endpoint.parse("[::1]:50051"))
    for bad in ("unix:relative.sock", "localhost", ":80", "host:http", "host:70000"):
        with pytest.raises(ValueError, match="endpoint"):
            Endpoint.parse(bad)
    with pytest.raises(ValueError, match="at most 107 bytes"):
        Endpoint.parse("unix:/" + "x" * 120)


def test_tcp_port_zero_binds_a_free_port() -> None:
    """A TCP server asked for port 0 says which port it got, and answers there."""
    with BotServer(Bot(), "127.0.0.1:0") as server, BotClient(server.endpoint) as client:
        assert not server.endpoint.endswith(":0")
        client.wait_ready(5)
        assert "bot" == client.handshake().name


def test_a_stale_socket_file_is_replaced(endpoint: str) -> None:
    """A socket file left by a dead server does not stop a new one from starting."""
    path = endpoint.removeprefix("unix:")
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)
    stale.close()  # the file stays; nobody listens
    with BotServer(Bot(), endpoint), BotClient(endpoint) as client:
        client.wait_ready(5)
        assert client.health()


def test_a_live_socket_is_not_taken_over(served: BotClient, endpoint: str) -> None:
    """A second server refuses an endpoint where another one is listening."""
    with pytest.raises(OSError, match="another server is listening"):
        BotServer(Bot(), endpoint).start()
    assert served.health()


SCRIPT = """\
import sys
from flipflop import Bot, serve

class Named(Bot):
    name = "sigterm-test"

serve(Named())
print("returned", flush=True)
"""


def test_serve_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """On SIGTERM, ``serve`` stops, removes its socket, returns, and the script exits 0.

    The script passes --listen, which wins over FLIPFLOP_LISTEN; ``serve`` prints one line once
    it listens.
    """
    env = {**os.environ, "FLIPFLOP_LISTEN": f"unix:{tmp_path / 'env.sock'}"}
    process, sock = serve_script(tmp_path, textwrap.dedent(SCRIPT), "sigterm-test", env)
    try:
        with BotClient(f"unix:{sock}") as client:
            assert client.health(timeout=5)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=15)
    finally:
        process.kill()
    assert (0, "returned\n") == (process.returncode, out), err
    assert not sock.exists()
    assert not (tmp_path / "env.sock").exists()


class _Counting(Bot):
    """Counts its own decisions; one instance per match when served as a class."""

    made: ClassVar[list[_Counting]] = []

    def __init__(self) -> None:
        self.decisions = 0
        self.started: list[str] = []
        _Counting.made.append(self)

    def start_match(self, info: MatchInfo) -> None:
        self.started.append(info.match_id)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        self.decisions += 1
        return DRAW_STOCK


def test_a_bot_class_gets_one_instance_per_match(endpoint: str) -> None:
    """serve/BotServer given the class makes a fresh instance for each match it is told of."""
    _Counting.made.clear()
    with BotServer(_Counting, endpoint), BotClient(endpoint) as client:
        config = MatchConfig(seats=3, hand_cap=2)
        play_over_grpc(client, config, 1, "first")
        play_over_grpc(client, config, 2, "second")
    per_match = [b for b in _Counting.made if b.started]
    expected = [[f"{m}-seat{s}"] for m in ("first", "second") for s in range(3)]
    assert expected == [b.started for b in per_match]  # one match id per instance
    assert all(b.decisions > 0 for b in per_match)
