"""The arena's side of the bot protocol: one :class:`BotClient` per bot endpoint.

Every call takes a ``timeout`` (seconds) that becomes its deadline, and every failure
comes back as a :class:`~flipflop.BotError` that says which bot and how: :func:`bot_error` is
the one place where gRPC status codes become SDK errors. Answers are decoded by ``_wire`` and
never trusted: a malformed action, a different major protocol version, a handshake string that
is too long or holds a control character, or an oversized answer is a
:class:`~flipflop.BotProtocolError`, never a hang.

**Sizes.** Every answer has a cap by call (``_wire.ANSWER_CAPS``: 16 KiB for a decision, 8 KiB
for the handshake, 1 KiB for the others). gRPC refuses anything over the largest cap as it
arrives (RESOURCE_EXHAUSTED), and each call checks its own cap on the bytes received before it
decodes them, so no answer can make the arena hold more than 16 KiB of it.

**Decisions on a stream.** After a handshake in which the bot announces ``decide-stream``
(protocol 1.2), :meth:`BotClient.decide` asks for a match's decisions on one ``DecideStream``
call, opened at the match's first decision and half-closed by :meth:`BotClient.end_match`;
otherwise (a 1.1 bot, or no handshake) each decision is one ``Decide`` call. A decision has the
same deadline, errors and size cap either way. gRPC cannot put a deadline on one message of a
stream, so one watchdog thread per client cancels a stream whose decision is late: that is a
:class:`~flipflop.BotTimeout`, and the match's next decision opens a fresh stream, as after
any failed decision. Different matches stream at once; one match's decisions come one after
the other. A bot that announces the feature but answers ``DecideStream`` with UNIMPLEMENTED is
asked with ``Decide`` from then on, that decision included (within its deadline): no error.

**The seat token.** ``handshake(seat_token=…)`` checks that the bot presents the token it was
started with (``FLIPFLOP_SEAT_TOKEN``), in constant time. A missing or wrong one raises
:class:`~flipflop.SeatTokenError` and closes the client: every later call raises it again
without touching the network. The token is never stored, logged or put in an error message.
"""

from __future__ import annotations

import hmac
import math
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Self, TypeVar

import grpc
from google.protobuf.message import Message

from flipflop import _wire
from flipflop._actions import Action
from flipflop._bot import MatchInfo
from flipflop._errors import BotCrashed, BotError, BotProtocolError, BotTimeout, SeatTokenError
from flipflop._observation import Observation
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.grpc.health.v1 import health_pb2 as health_pb
from flipflop._results import HandResult, MatchResult
from flipflop._server import MAX_MESSAGE_BYTES, Endpoint
from flipflop._wire import (
    DECIDE_STREAM,
    MAX_ANSWER_BYTES,
    PROTOCOL_VERSION,
    BotIdentity,
    Decision,
)

__all__ = ["BotClient", "BotIdentity", "Decision", "bot_error"]

_Msg = TypeVar("_Msg", bound=Message)

_CRASHED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED})
_DETAILS_CHARS = 1000  # a status message is the bot's own text: cut it


def bot_error(
    code: grpc.StatusCode | None, details: str, *, call: str, bot: str | None = None
) -> BotError:
    """The SDK error for a failed call to a bot: the one mapping of gRPC status codes.

    ============================  ====================================================
    DEADLINE_EXCEEDED             :class:`~flipflop.BotTimeout`
    UNAVAILABLE, CANCELLED        :class:`~flipflop.BotCrashed` (process or socket gone)
    anything else                 :class:`~flipflop.BotProtocolError` (INTERNAL: the bot
                                  raised; RESOURCE_EXHAUSTED: an oversized answer;
                                  FAILED_PRECONDITION: version or unknown match; …)
    ============================  ====================================================

    Args:
        code: the status code (None when the call failed without one).
        details: the status message, as the bot or gRPC wrote it.
        call: which call failed, e.g. ``Decide``.
        bot: the bot's name, when known.
    """
    name = code.name if code is not None else "no status"
    if len(details) > _DETAILS_CHARS:
        details = f"{details[:_DETAILS_CHARS]}… ({len(details)} characters)"
    reason = f"{call} failed: {name}: {details}" if details else f"{call} failed: {name}"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return BotTimeout(f"{call}: no answer before the deadline", bot)
    if code in _CRASHED:
        return BotCrashed(reason, bot)
    return BotProtocolError(reason, bot)


def _status(error: grpc.RpcError) -> tuple[grpc.StatusCode | None, str]:
    """(code, details) of a failed call: its RpcError is also a grpc.Call, as a rule."""
    get_code, get_details = getattr(error, "code", None), getattr(error, "details", None)
    code = get_code() if callable(get_code) else None
    details = (get_details() or "") if callable(get_details) else str(error)
    return code, details


class _DecideStream:
    """One match's DecideStream call: requests go in through a queue, answers come out in order.

    grpcio sends what the request iterator yields from a thread of its own; ``None`` in the
    queue ends that iterator, which half-closes the stream (and ends that thread).

    Attributes:
        answers: the bot's answers, as they come (blocks; raises grpc.RpcError when it fails).
        deadline: when the watchdog cancels the call, while a decision is armed.
        timed_out: the watchdog cancelled the call.
    """

    __slots__ = ("_call", "_requests", "answers", "deadline", "timed_out")

    def __init__(self, method: grpc.StreamStreamMultiCallable[bytes, bytes]) -> None:
        self._requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._call = method(iter(self._requests.get, None))
        self.answers: Iterator[bytes] = iter(self._call)
        self.deadline = math.inf
        self.timed_out = False

    def send(self, request: bytes) -> None:
        """Send one request (grpcio's thread writes it)."""
        self._requests.put(request)

    def half_close(self) -> None:
        """No more requests: the bot ends the stream once it has answered the last one."""
        self._requests.put(None)

    def cancel(self) -> None:
        """End the stream now, whatever it was doing."""
        self._requests.put(None)
        self._call.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs leave it untyped


_WATCH_IDLE_S = 5.0
"""How long a client's deadline thread waits with nothing to watch before it ends."""


class _Watchdog:
    """Cancels a decision stream once its decision's deadline has passed.

    One thread, started at the first decision on a stream, sleeps until the earliest deadline
    armed. A decision arms a deadline later than the one the thread sleeps until (the usual
    case: one decision after another) without waking it, so the watch costs a decision two
    lock round trips and no thread switch. With nothing armed for :data:`_WATCH_IDLE_S` the
    thread ends (the next decision starts another), so a client nobody closes leaves none.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._armed: set[_DecideStream] = set()
        self._wake = math.inf  # when the thread looks next
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, stream: _DecideStream, timeout: float) -> None:
        """Cancel ``stream`` in ``timeout`` seconds unless it is disarmed before."""
        deadline = time.monotonic() + timeout
        with self._condition:
            stream.deadline = deadline
            self._armed.add(stream)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="flipflop-decision-deadlines", daemon=True
                )
                self._thread.start()
            elif deadline < self._wake:
                self._condition.notify()

    def disarm(self, stream: _DecideStream) -> None:
        """Stop watching ``stream``; from now on ``stream.timed_out`` stays as it is."""
        with self._condition:
            self._armed.discard(stream)

    def close(self) -> None:
        """Stop the thread."""
        with self._condition:
            self._closed = True
            self._condition.notify()

    def _run(self) -> None:
        with self._condition:
            while not self._closed:
                now = time.monotonic()
                for stream in [s for s in self._armed if s.deadline <= now]:
                    self._armed.discard(stream)
                    stream.timed_out = True
                    stream.cancel()
                self._wake = min((s.deadline for s in self._armed), default=math.inf)
                if self._armed:
                    self._condition.wait(self._wake - now)
                elif not self._condition.wait(_WATCH_IDLE_S) and not self._armed:
                    break  # idle: end; arm() starts a new thread (both under the lock)
            self._thread = None


class BotClient:
    """A connection to one bot (the arena's side); safe to share between threads.

    Call :meth:`handshake` first; then, per match, :meth:`start_match`, :meth:`decide` for
    each decision with :meth:`hand_ended` after every hand, and :meth:`end_match`. One match's
    decisions must come one after the other; different matches may decide at once.

    Args:
        endpoint: ``unix:/abs/path.sock`` or ``host:port``.
        name: the bot's name for error messages until the handshake tells it.
        arena_version: sent in the handshake, for the bot's logs.
        max_message_bytes: gRPC's receive limit: the largest answer read at all (a bigger one
            is a protocol error, RESOURCE_EXHAUSTED). Each call's own cap
            (``_wire.ANSWER_CAPS``) applies on top of it.

    Attributes:
        endpoint: where the bot listens.
        identity: what the handshake said, once it has succeeded.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        name: str | None = None,
        arena_version: str = "",
        max_message_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self.endpoint = endpoint
        self.identity: BotIdentity | None = None
        self._name = name
        self._arena_version = arena_version
        # Set once a handshake failed its seat token: the reason every later call raises.
        self._refused: str | None = None
        # Decisions on DecideStream: set by a handshake announcing it (module docstring).
        self._streaming = False
        self._streams: dict[str, _DecideStream] = {}  # by match id
        self._streams_lock = threading.Lock()
        self._watchdog = _Watchdog()
        self._channel = grpc.insecure_channel(
            Endpoint.parse(endpoint).target,
            options=[
                ("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                # A bot is local: never through a proxy, and never a call sent twice.
                ("grpc.enable_http_proxy", 0),
                ("grpc.enable_retries", 0),
                # A freshly started bot is reconnected to quickly (the default waits 1 s+).
                # Not grpc.min_reconnect_backoff_ms: it is also the time a connection is
                # given to send its first SETTINGS frame (20 s by default), and at 50 ms a
                # bot on a loaded machine failed its first call as a crash at once.
                ("grpc.initial_reconnect_backoff_ms", 50),
                ("grpc.max_reconnect_backoff_ms", 500),
                # Connections are this channel's own: gRPC would otherwise share them between
                # channels of the same target, and the arena's targets (/proc/self/fd/N) name
                # different bots over time as descriptor numbers are reused.
                ("grpc.use_local_subchannel_pool", 1),
            ],
        )
        # Every call passes bytes: each answer's size is checked before it is decoded (and
        # Decide's are coded by _wire by hand, the hot path).
        self._handshake = self._method("/flipflop.v1.Bot/Handshake")
        self._start_match = self._method("/flipflop.v1.Bot/StartMatch")
        self._decide = self._method("/flipflop.v1.Bot/Decide")
        self._decide_stream = self._channel.stream_stream(
            "/flipflop.v1.Bot/DecideStream", request_serializer=None, response_deserializer=None
        )
        self._hand_ended = self._method("/flipflop.v1.Bot/HandEnded")
        self._end_match = self._method("/flipflop.v1.Bot/EndMatch")
        self._health = self._method("/grpc.health.v1.Health/Check")

    def _method(self, path: str) -> grpc.UnaryUnaryMultiCallable[bytes, bytes]:
        return self._channel.unary_unary(path, request_serializer=None, response_deserializer=None)

    @property
    def name(self) -> str | None:
        """The bot's name: from the handshake, else the one given, else None."""
        return self.identity.name if self.identity is not None else self._name

    @property
    def streams_decisions(self) -> bool:
        """True while decisions go on DecideStream (see the module docstring).

        That is: the handshake announced ``decide-stream``, and the bot has not answered
        DecideStream with UNIMPLEMENTED.
        """
        return self._streaming

    def _check_open(self) -> None:
        """Refuse any call once a handshake presented a wrong seat token (nothing is sent)."""
        if self._refused is not None:
            raise SeatTokenError(self._refused, self._name)

    def _call(
        self,
        method: grpc.UnaryUnaryMultiCallable[bytes, bytes],
        request: bytes | Message,
        timeout: float,
        call: str,
        *,
        wait_for_ready: bool = False,
    ) -> bytes:
        """Make one call; return the answer's bytes once they are within the call's cap."""
        self._check_open()
        if isinstance(request, Message):
            request = request.SerializeToString()
        try:
            answer = method(request, timeout=timeout, wait_for_ready=wait_for_ready)
        except grpc.RpcError as e:
            raise bot_error(*_status(e), call=call, bot=self.name) from None
        self._check_size(call, answer)
        return answer

    def _check_size(self, call: str, answer: bytes) -> None:
        try:
            _wire.check_answer_size(call, len(answer))
        except BotProtocolError as e:
            raise BotProtocolError(e.reason, self.name) from e

    def _parse(self, message_type: type[_Msg], answer: bytes, call: str) -> _Msg:
        try:
            return _wire.parse_answer(message_type, answer, call)
        except BotProtocolError as e:
            raise BotProtocolError(e.reason, self.name) from e

    def handshake(self, timeout: float = 5.0, seat_token: str | None = None) -> BotIdentity:
        """Agree on the protocol, learn who the bot is and check its seat token.

        Args:
            timeout: the deadline in seconds.
            seat_token: the token the bot was started with (``FLIPFLOP_SEAT_TOKEN``); the bot
                must present exactly this one. None: no check (a bot not started by the
                caller, e.g. an endpoint given by a person).

        Raises:
            SeatTokenError: ``seat_token`` was given and the bot presented none, or another.
                The client is then closed: every later call raises the same error.
            BotProtocolError: an answer over its size cap, the bot speaks another major
                protocol version (the message names both), or a string of the answer is
                missing, too long or holds a control character (the message names the field).
            BotTimeout, BotCrashed: no answer.
            ValueError: ``seat_token`` is empty (pass None for no check).
        """
        if seat_token is not None and not seat_token:
            raise ValueError("seat_token is empty: pass None for no check")
        answer = self._call(
            self._handshake,
            _wire.handshake_request(self._arena_version),
            timeout,
            "Handshake",
        )
        response = self._parse(pb.HandshakeResponse, answer, "Handshake")
        if seat_token is not None:
            self._check_seat_token(response.seat_token, seat_token)
        try:
            identity = _wire.identity_from_proto(response)
        except BotProtocolError as e:
            raise BotProtocolError(e.reason, self.name) from e
        if not _wire.speaks_our_major(identity.protocol_version):
            raise BotProtocolError(
                f"protocol version mismatch: the bot speaks {identity.protocol_version}, "
                f"the arena speaks {PROTOCOL_VERSION}; the major versions must match",
                identity.name,
            )
        self.identity = identity
        self._streaming = DECIDE_STREAM in identity.features
        return identity

    def _check_seat_token(self, presented: str, expected: str) -> None:
        """Compare in constant time; on a mismatch close for good and raise SeatTokenError."""
        if not presented:
            why = "the bot presented no seat token"
        elif hmac.compare_digest(presented.encode("utf-8"), expected.encode("utf-8")):
            return
        else:
            why = "the bot presented a wrong seat token"
        reason = (
            f"Handshake: {why}: the process answering on {self.endpoint} is not the one "
            "started for this seat (FLIPFLOP_SEAT_TOKEN); no further call is made to it"
        )
        self._refused = reason
        self.close()
        raise SeatTokenError(reason, self._name)

    def start_match(self, info: MatchInfo, timeout: float = 5.0) -> None:
        """Tell the bot a match starts (its seat, the players, the rules, its time)."""
        answer = self._call(
            self._start_match, _wire.match_info_to_proto(info), timeout, "StartMatch"
        )
        self._parse(pb.StartMatchResponse, answer, "StartMatch")

    def decide(
        self,
        match_id: str,
        obs: Observation,
        legal: Sequence[Action],
        *,
        time_left_ms: int,
        time_bank_ms: int,
        timeout: float,
    ) -> Decision:
        """Ask for one decision: on the match's stream if the bot serves DecideStream.

        Args:
            match_id: the match, as in :meth:`start_match`.
            obs: the bot's observation (its seat is to act).
            legal: the legal actions (PLAY phase: the legal first steps).
            time_left_ms: milliseconds before the decision is late.
            time_bank_ms: what is left of the match time bank.
            timeout: the deadline in seconds.

        Returns:
            The actions in order, the debug note cut to 1024 bytes, and the note's length as
            sent. The actions are well-formed but not checked for legality: that is the
            engine's job.

        Raises:
            BotProtocolError: a malformed answer (the reason names the action), an answer over
                its 16 KiB cap, an error the bot raised, or an unknown match.
            BotTimeout, BotCrashed: no answer.
        """
        request = _wire.decide_request_bytes(match_id, obs, legal, time_left_ms, time_bank_ms)
        if self._streaming:
            answer = self._decide_on_stream(match_id, request, timeout)
        else:
            answer = self._call(self._decide, request, timeout, "Decide")
        try:
            return _wire.decision_from_bytes(answer)
        except BotProtocolError as e:
            raise BotProtocolError(f"Decide: {e.reason}", self.name) from e

    def _decide_on_stream(self, match_id: str, request: bytes, timeout: float) -> bytes:
        """One decision on the match's stream (opened if need be): the answer, within its cap.

        A stream that fails (or times out) is dropped: the next decision opens a new one.
        """
        self._check_open()
        started = time.monotonic()
        stream = self._streams.get(match_id)
        if stream is None:
            stream = _DecideStream(self._decide_stream)
            with self._streams_lock:
                self._streams[match_id] = stream
        error: grpc.RpcError | None = None
        self._watchdog.arm(stream, timeout)
        stream.send(request)  # then straight to the wait: grpcio's sending thread needs the GIL
        try:
            answer = next(stream.answers, None)
        except grpc.RpcError as e:
            answer, error = None, e
        finally:
            self._watchdog.disarm(stream)
        if answer is None or stream.timed_out:  # an answer just in time: the call is cancelled
            self._drop_stream(match_id, stream)
        if answer is None:
            left = timeout - (time.monotonic() - started)
            return self._stream_failed(stream, error, request, left)
        self._check_size("Decide", answer)
        return answer

    def _stream_failed(
        self, stream: _DecideStream, error: grpc.RpcError | None, request: bytes, left: float
    ) -> bytes:
        """Raise the error for a decision whose stream ended without an answer.

        Unless the bot does not serve DecideStream: then ask by Decide, for good.
        """
        if stream.timed_out:
            raise bot_error(grpc.StatusCode.DEADLINE_EXCEEDED, "", call="Decide", bot=self.name)
        if error is None:
            raise BotProtocolError(
                "Decide: the bot ended the decision stream without an answer", self.name
            )
        code, details = _status(error)
        if code is grpc.StatusCode.UNIMPLEMENTED:
            self._streaming = False  # it announced decide-stream, but does not serve it
            return self._call(self._decide, request, max(left, 0.0), "Decide")
        raise bot_error(code, details, call="Decide", bot=self.name)

    def _drop_stream(self, match_id: str, stream: _DecideStream) -> None:
        with self._streams_lock:
            if self._streams.get(match_id) is stream:
                del self._streams[match_id]
        stream.cancel()

    def _close_stream(self, match_id: str, timeout: float) -> None:
        """Half-close the match's stream, if it has one; let the bot end it, then release it."""
        with self._streams_lock:
            stream = self._streams.pop(match_id, None)
        if stream is None:
            return
        stream.half_close()
        self._watchdog.arm(stream, timeout)
        try:
            next(stream.answers, None)  # returns once the bot has ended the stream
        except grpc.RpcError:
            pass  # it ended with an error, or not in time: the match is over anyway
        finally:
            self._watchdog.disarm(stream)
            stream.cancel()

    def hand_ended(self, match_id: str, result: HandResult, timeout: float = 5.0) -> None:
        """Tell the bot how a hand was settled."""
        answer = self._call(
            self._hand_ended, _wire.hand_ended_request(match_id, result), timeout, "HandEnded"
        )
        self._parse(pb.HandEndedResponse, answer, "HandEnded")

    def end_match(self, match_id: str, result: MatchResult, timeout: float = 5.0) -> None:
        """Tell the bot the match is over (and forget what was cached of its history).

        The match's decision stream, if any, is half-closed first and released once the bot has
        ended it; ``timeout`` covers that and the EndMatch call.
        """
        started = time.monotonic()
        try:
            self._close_stream(match_id, timeout)
            left = max(0.0, timeout - (time.monotonic() - started))
            answer = self._call(
                self._end_match, _wire.end_match_request(match_id, result), left, "EndMatch"
            )
        finally:
            _wire.forget_match(match_id)
        self._parse(pb.EndMatchResponse, answer, "EndMatch")

    def health(self, timeout: float = 1.0, service: str = "flipflop.v1.Bot") -> bool:
        """True if the bot answers SERVING for ``service``.

        False for any other answer: NOT_SERVING, NOT_FOUND for a service it does not offer, or
        an answer that breaks the protocol (over its 1 KiB cap, garbage).

        Raises:
            BotTimeout, BotCrashed: no answer at all.
            SeatTokenError: the handshake failed its seat token: no call is made.
        """
        try:
            answer = self._call(
                self._health, _wire.health_request(service), timeout, "Health.Check"
            )
            response = self._parse(health_pb.HealthCheckResponse, answer, "Health.Check")
        except SeatTokenError:
            raise
        except BotProtocolError:
            return False
        return _wire.is_serving(response)

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait until a freshly started bot answers its health check with SERVING.

        Raises:
            BotTimeout: it did not within ``timeout`` seconds.
            SeatTokenError: the handshake failed its seat token: no call is made.
        """
        deadline = time.monotonic() + timeout
        while True:
            self._check_open()
            left = deadline - time.monotonic()
            if left <= 0:
                raise BotTimeout(f"not ready (health SERVING) within {timeout:g} s", self.name)
            try:
                answer = self._call(
                    self._health,
                    _wire.health_request("flipflop.v1.Bot"),
                    left,
                    "Health.Check",
                    wait_for_ready=True,  # wait for the socket to appear, not fail at once
                )
                response = self._parse(health_pb.HealthCheckResponse, answer, "Health.Check")
                if _wire.is_serving(response):
                    return
            except SeatTokenError:
                raise
            except BotTimeout:
                continue  # the loop raises with the full story
            except BotError:
                pass
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        """Close the connection (calls in flight and decision streams are cancelled)."""
        with self._streams_lock:
            streams, self._streams = list(self._streams.values()), {}
        for stream in streams:
            stream.cancel()
        self._watchdog.close()
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
