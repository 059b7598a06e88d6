"""The arena's side of the bot protocol: one :class:`BotClient` per bot endpoint.

Every call takes a ``timeout`` (seconds) that becomes the gRPC deadline, and every failure
comes back as a :class:`~flipflop.BotError` that says which bot and how: :func:`bot_error` is
the one place where gRPC status codes become SDK errors. Answers are decoded by ``_wire`` and
never trusted: a malformed action, an oversized message (over 4 MiB) or a different major
protocol version is a :class:`~flipflop.BotProtocolError`, never a hang.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import TracebackType
from typing import Self, TypeVar

import grpc

from flipflop import _wire
from flipflop._actions import Action
from flipflop._bot import MatchInfo
from flipflop._errors import BotCrashed, BotError, BotProtocolError, BotTimeout
from flipflop._observation import Observation
from flipflop._proto.flipflop.v1 import bot_pb2_grpc as pb_grpc
from flipflop._proto.grpc.health.v1 import health_pb2_grpc as health_grpc
from flipflop._results import HandResult, MatchResult
from flipflop._server import MAX_MESSAGE_BYTES, Endpoint
from flipflop._wire import PROTOCOL_VERSION, BotIdentity, Decision

__all__ = ["BotClient", "BotIdentity", "Decision", "bot_error"]

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")

_CRASHED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED})


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
    reason = f"{call} failed: {name}: {details}" if details else f"{call} failed: {name}"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return BotTimeout(f"{call}: no answer before the deadline", bot)
    if code in _CRASHED:
        return BotCrashed(reason, bot)
    return BotProtocolError(reason, bot)


class BotClient:
    """A connection to one bot (the arena's side); safe to share between threads.

    Call :meth:`handshake` first; then, per match, :meth:`start_match`, :meth:`decide` for
    each decision with :meth:`hand_ended` after every hand, and :meth:`end_match`.

    Args:
        endpoint: ``unix:/abs/path.sock`` or ``host:port``.
        name: the bot's name for error messages until the handshake tells it.
        arena_version: sent in the handshake, for the bot's logs.
        max_message_bytes: the largest answer accepted; a bigger one is a protocol error.

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
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.endpoint = endpoint
        self.identity: BotIdentity | None = None
        self._name = name
        self._arena_version = arena_version
        self._channel = grpc.insecure_channel(
            Endpoint.parse(endpoint).target,
            options=[
                ("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                # A bot is local: never through a proxy, and never a call sent twice.
                ("grpc.enable_http_proxy", 0),
                ("grpc.enable_retries", 0),
                # A freshly started bot is reconnected to quickly (the default waits 1 s+).
                ("grpc.initial_reconnect_backoff_ms", 50),
                ("grpc.min_reconnect_backoff_ms", 50),
                ("grpc.max_reconnect_backoff_ms", 500),
            ],
        )
        self._bot = pb_grpc.BotStub(self._channel)
        # Decide carries bytes that _wire codes by hand (the hot path).
        self._decide: grpc.UnaryUnaryMultiCallable[bytes, bytes] = self._channel.unary_unary(
            "/flipflop.v1.Bot/Decide", request_serializer=None, response_deserializer=None
        )
        self._health = health_grpc.HealthStub(self._channel)

    @property
    def name(self) -> str | None:
        """The bot's name: from the handshake, else the one given, else None."""
        return self.identity.name if self.identity is not None else self._name

    def _call(
        self,
        method: grpc.UnaryUnaryMultiCallable[_Request, _Response],
        request: _Request,
        timeout: float,
        call: str,
        *,
        wait_for_ready: bool = False,
    ) -> _Response:
        try:
            return method(request, timeout=timeout, wait_for_ready=wait_for_ready)
        except grpc.RpcError as e:
            # A failed unary call raises an RpcError that is also a grpc.Call (code, details).
            get_code, get_details = getattr(e, "code", None), getattr(e, "details", None)
            code = get_code() if callable(get_code) else None
            details = (get_details() or "") if callable(get_details) else str(e)
            raise bot_error(code, details, call=call, bot=self.name) from None

    def handshake(self, timeout: float = 5.0) -> BotIdentity:
        """Agree on the protocol and learn who the bot is.

        Raises:
            BotProtocolError: the bot speaks another major protocol version (the message names
                both), or answered without a name.
            BotTimeout, BotCrashed: no answer.
        """
        response = self._call(
            self._bot.Handshake,
            _wire.handshake_request(self._arena_version),
            timeout,
            "Handshake",
        )
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
        return identity

    def start_match(self, info: MatchInfo, timeout: float = 5.0) -> None:
        """Tell the bot a match starts (its seat, the players, the rules, its time)."""
        self._call(self._bot.StartMatch, _wire.match_info_to_proto(info), timeout, "StartMatch")

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
        """Ask for one decision.

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
            BotProtocolError: a malformed answer (the reason names the action), an error the
                bot raised, or an unknown match.
            BotTimeout, BotCrashed: no answer.
        """
        response = self._call(
            self._decide,
            _wire.decide_request_bytes(match_id, obs, legal, time_left_ms, time_bank_ms),
            timeout,
            "Decide",
        )
        try:
            return _wire.decision_from_bytes(response)
        except BotProtocolError as e:
            raise BotProtocolError(f"Decide: {e.reason}", self.name) from e

    def hand_ended(self, match_id: str, result: HandResult, timeout: float = 5.0) -> None:
        """Tell the bot how a hand was settled."""
        self._call(
            self._bot.HandEnded, _wire.hand_ended_request(match_id, result), timeout, "HandEnded"
        )

    def end_match(self, match_id: str, result: MatchResult, timeout: float = 5.0) -> None:
        """Tell the bot the match is over."""
        self._call(
            self._bot.EndMatch, _wire.end_match_request(match_id, result), timeout, "EndMatch"
        )

    def health(self, timeout: float = 1.0, service: str = "flipflop.v1.Bot") -> bool:
        """True if the bot answers SERVING for ``service``.

        False for any other answer: NOT_SERVING, or NOT_FOUND for a service it does not offer.

        Raises:
            BotTimeout, BotCrashed: no answer at all.
        """
        try:
            response = self._call(
                self._health.Check, _wire.health_request(service), timeout, "Health.Check"
            )
        except BotProtocolError:
            return False
        return _wire.is_serving(response)

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait until a freshly started bot answers its health check with SERVING.

        Raises:
            BotTimeout: it did not within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BotTimeout(f"not ready (health SERVING) within {timeout:g} s", self.name)
            try:
                response = self._call(
                    self._health.Check,
                    _wire.health_request("flipflop.v1.Bot"),
                    left,
                    "Health.Check",
                    wait_for_ready=True,  # wait for the socket to appear, not fail at once
                )
                if _wire.is_serving(response):
                    return
            except BotTimeout:
                continue  # the loop raises with the full story
            except BotError:
                pass
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        """Close the connection (calls in flight are cancelled)."""
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
