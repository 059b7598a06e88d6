"""Host a bot as a gRPC server: what ``serve(MyBot())`` at the bottom of a bot script runs.

The arena is the client; the bot answers the ``flipflop.v1.Bot`` service of
``proto/flipflop/v1/bot.proto`` and the standard health check (service ``""`` or
``"flipflop.v1.Bot"``) on one endpoint: ``unix:/abs/path.sock`` (what sandboxes use) or
``host:port`` (TCP, while developing).

**Answers and notes.** :meth:`Bot.start_turn` returns one :class:`Action`, and
:meth:`Bot.play_turn` a sequence of actions. Either may instead return a pair
``(answer, note)`` where ``note`` is a ``str``: a debug note the arena keeps in the replay next
to the action. Notes are cut to 1024 bytes of UTF-8, on a character boundary. A pair is used
(not an attribute on the bot) because one bot instance may decide for several matches at once.

**One bot per match.** ``serve(MyBot)`` — the class, or any function returning a new bot —
gives every match its own instance, so per-match state can simply live on ``self``. With an
instance, ``serve(MyBot())``, all matches share it: calls for different matches can then reach
it concurrently, from different threads, so a bot that keeps mutable state must guard it.
Either way the server keeps each match's :class:`MatchInfo` by match id, checks that every
decision is for a started match and for that match's seat, and forgets the match at EndMatch.

**The seat token.** The arena starts every bot with a fresh secret in the environment variable
``FLIPFLOP_SEAT_TOKEN`` and refuses a handshake that does not send it back (protocol 1.1). The
server reads it once, when it is made, removes it from ``os.environ`` (so that child processes,
logs and notes that dump the environment never see it), and sends it in every handshake: a bot
author does nothing. Without the variable (a bot started by hand) the handshake carries none.

**Decisions on a stream.** The server announces the feature ``decide-stream`` (protocol 1.2),
so the arena asks for a match's decisions on one ``DecideStream`` call instead of one
``Decide`` call each. A stream answers each request in turn through ``Decide`` itself (the
same checks, answers and status codes), checks that every request is for the match of its
first one, and ends with the status ``Decide`` would have answered as soon as a decision is
refused (the arena then opens a new stream). An open stream holds one of the server's threads
until its match ends, so the server keeps at most :data:`MAX_DECIDE_STREAMS` open at once and
has as many threads more than ``max_workers``: however many streams are open, ``max_workers``
threads are left for the other calls (a HandEnded must never wait for a thread held by a
stream).

**Sizes.** Requests over :data:`MAX_MESSAGE_BYTES` (4 MiB) are refused by gRPC. The arena caps
each answer by call (``ANSWER_CAPS``: 16 KiB for a decision, on a stream as in ``Decide``): a
note is cut to 1024 bytes here, but a plan of thousands of steps would be over the cap and
refused.

**Status codes** the server answers with (all in :data:`_STATUS`):

=====================  ===================================================================
INVALID_ARGUMENT       a request that does not decode (card 52, UNSPECIFIED phase, …); on a
                       stream, a request for another match than the stream's first
FAILED_PRECONDITION    another major protocol version; a match id with no StartMatch
ALREADY_EXISTS         a StartMatch for a match id that is being played
INTERNAL               the bot's code raised, or returned something that is not an answer
NOT_FOUND              a health check for a service other than ``""`` or ``flipflop.v1.Bot``
RESOURCE_EXHAUSTED     a DecideStream while :data:`MAX_DECIDE_STREAMS` are open
=====================  ===================================================================
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import signal
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, NoReturn, Self, TypeVar

import grpc
from google.protobuf.message import Message

from flipflop import _wire
from flipflop._actions import Action, Phase
from flipflop._bot import Bot, MatchInfo, split_note
from flipflop._errors import BotProtocolError, MalformedActionError
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._proto.grpc.health.v1 import health_pb2 as health_pb
from flipflop._proto.grpc.health.v1 import health_pb2_grpc as health_grpc
from flipflop._wire import DECIDE_STREAM, MAX_REQUEST_BYTES, PROTOCOL_VERSION

__all__ = [
    "DEFAULT_ENDPOINT",
    "FEATURES",
    "LISTEN_ENV",
    "MAX_DECIDE_STREAMS",
    "MAX_MESSAGE_BYTES",
    "PROTOCOL_VERSION",
    "SEAT_TOKEN_ENV",
    "BotServer",
    "Endpoint",
    "serve",
]

DEFAULT_ENDPOINT = "unix:/tmp/flipflop-bot.sock"
"""Where :func:`serve` listens when neither ``listen``, ``--listen`` nor the environment say."""
LISTEN_ENV = "FLIPFLOP_LISTEN"
"""The environment variable :func:`serve` reads the endpoint from."""
FEATURES = ("concurrent-matches", "debug-notes", DECIDE_STREAM)
"""The optional capabilities a Python bot announces in the handshake."""
MAX_DECIDE_STREAMS = 16
"""The most DecideStream calls a bot's server keeps open at once (one per match being played);
one more is refused with RESOURCE_EXHAUSTED. Each holds a thread of its own until it ends."""
SEAT_TOKEN_ENV = "FLIPFLOP_SEAT_TOKEN"
"""The environment variable holding the seat token the arena started the bot with."""
MAX_MESSAGE_BYTES = MAX_REQUEST_BYTES
"""The largest request a bot's server accepts (4 MiB); a bigger one is refused, never waited for.
Answers have smaller caps, by call (``flipflop._wire.ANSWER_CAPS``)."""

_log = logging.getLogger("flipflop.server")
_UNIX_PATH_MAX = 107  # sun_path is 108 bytes on Linux, NUL included


# ---------------------------------------------------------------------------------- endpoints


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a bot listens: a unix socket (``path``) or a TCP ``host:port``.

    Attributes:
        path: the socket file, for a unix endpoint; None for TCP.
        host: the TCP host ("" for a unix endpoint).
        port: the TCP port (0: any free port, when binding); 0 for a unix endpoint.
    """

    path: Path | None = None
    host: str = ""
    port: int = 0

    @staticmethod
    def parse(text: str) -> Endpoint:
        """Parse ``unix:/abs/path.sock`` (also ``unix:///abs/path.sock``) or ``host:port``.

        Raises:
            ValueError: anything else, a relative socket path, a path too long for a unix
                socket, or a port outside 0..65535.
        """
        if text.startswith("unix:"):
            raw = text[len("unix:") :]
            if raw.startswith("//"):
                raw = raw[2:]
            path = Path(raw)
            if not path.is_absolute():
                raise ValueError(f"endpoint {text!r}: the socket path must be absolute")
            if len(os.fsencode(raw)) > _UNIX_PATH_MAX:
                raise ValueError(
                    f"endpoint {text!r}: a unix socket path has at most {_UNIX_PATH_MAX} bytes"
                )
            return Endpoint(path=path)
        host, sep, port_text = text.rpartition(":")
        if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
            raise ValueError(
                f"endpoint {text!r}: expected unix:/absolute/path.sock or host:port (TCP)"
            )
        return Endpoint(host=host, port=int(port_text))

    @property
    def target(self) -> str:
        """The endpoint as gRPC writes it (``unix:/abs/path`` or ``host:port``)."""
        return f"unix:{self.path}" if self.path is not None else f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return self.target


def _clear_stale_socket(path: Path) -> None:
    """Remove a socket file left by a server that is gone; refuse to take over a live one."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(errno.EEXIST, "exists and is not a socket", str(path))
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink(missing_ok=True)  # nobody listens: stale
        return
    finally:
        probe.close()
    raise OSError(errno.EADDRINUSE, "another server is listening on this socket", str(path))


# ---------------------------------------------------------------------------------- servicer


class _Why(Enum):
    """Why the server refuses a call; :data:`_STATUS` gives the status code for each."""

    BAD_REQUEST = "bad request"
    """The request does not decode."""
    WRONG_VERSION = "wrong protocol version"
    """The arena speaks another major protocol version."""
    UNKNOWN_MATCH = "unknown match"
    """A call for a match id with no StartMatch (or one that has ended)."""
    DUPLICATE_MATCH = "duplicate match"
    """A StartMatch for a match id that is being played."""
    BOT_FAILED = "bot failed"
    """The bot's code raised, or returned something that is not an answer."""
    TOO_MANY_STREAMS = "too many streams"
    """A DecideStream while :data:`MAX_DECIDE_STREAMS` are open."""
    UNKNOWN_SERVICE = "unknown service"
    """A health check for a service this server does not offer."""


_STATUS: dict[_Why, grpc.StatusCode] = {
    _Why.BAD_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,
    _Why.WRONG_VERSION: grpc.StatusCode.FAILED_PRECONDITION,
    _Why.UNKNOWN_MATCH: grpc.StatusCode.FAILED_PRECONDITION,
    _Why.DUPLICATE_MATCH: grpc.StatusCode.ALREADY_EXISTS,
    _Why.BOT_FAILED: grpc.StatusCode.INTERNAL,
    _Why.TOO_MANY_STREAMS: grpc.StatusCode.RESOURCE_EXHAUSTED,
    _Why.UNKNOWN_SERVICE: grpc.StatusCode.NOT_FOUND,
}


class _Refused(Exception):
    """Raised inside a handler to answer the call with an error status."""

    def __init__(self, why: _Why, message: str) -> None:
        super().__init__(message)
        self.why = why
        self.message = message


_T = TypeVar("_T")
_M = TypeVar("_M")
_Servicer = TypeVar("_Servicer")
_Request = TypeVar("_Request")
_Response = TypeVar("_Response")
_Handler = Callable[[_Servicer, _Request, grpc.ServicerContext], _Response]


def _abort(context: grpc.ServicerContext, error: Exception, call: str) -> NoReturn:
    """End ``call`` with the status for ``error``: :class:`_Refused`'s, else INTERNAL.

    Called while ``error`` is being handled, so that a bug of ours is logged with its traceback.
    """
    if isinstance(error, _Refused):
        context.abort(_STATUS[error.why], error.message)
    # A bug in the SDK itself: say so rather than hang up.
    _log.exception("%s failed", call)
    context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")


def _handler(
    method: _Handler[_Servicer, _Request, _Response],
) -> _Handler[_Servicer, _Request, _Response]:
    """Turn :class:`_Refused` (and any bug of ours) into a status code for the client."""

    @functools.wraps(method)
    def handle(self: _Servicer, request: _Request, context: grpc.ServicerContext) -> _Response:
        try:
            return method(self, request, context)
        except Exception as e:
            _abort(context, e, method.__name__)

    return handle


def _decoded(decode: Callable[[_M], _T], message: _M) -> _T:
    """Decode a request message, refusing it as a bad request if it is malformed."""
    try:
        return decode(message)
    except (BotProtocolError, MalformedActionError) as e:
        raise _Refused(_Why.BAD_REQUEST, str(e)) from e


def _stream_match(match_id: str, request: bytes) -> str:
    """The match of a DecideStream whose next request is ``request`` ("": its first one).

    Raises:
        _Refused: a request that does not decode, or one for another match.
    """
    theirs = _decoded(_wire.decide_match_id, request)
    if match_id and theirs != match_id:
        raise _Refused(
            _Why.BAD_REQUEST,
            f"a request for match {theirs!r} on the stream of match {match_id!r}: "
            "one stream per match",
        )
    return theirs


BotFactory = Callable[[], Bot]
"""A zero-argument callable returning a new bot (a Bot subclass itself qualifies)."""


def _instance(bot: Bot | BotFactory) -> tuple[Bot, BotFactory | None]:
    """(the bot answering handshakes, the factory for per-match instances or None)."""
    if isinstance(bot, Bot):
        return bot, None
    made = bot()
    if not isinstance(made, Bot):
        raise TypeError(f"{bot!r} returned {type(made).__name__}, not a flipflop.Bot")
    return made, bot


class _BotServicer:
    """The ``flipflop.v1.Bot`` service around a bot (one per match with a factory).

    ``seat_token`` is sent back in every handshake ("": none); it is never logged.
    """

    def __init__(self, bot: Bot | BotFactory, seat_token: str = "") -> None:
        self.bot, self._factory = _instance(bot)
        self._seat_token = seat_token
        self._matches: dict[str, MatchInfo] = {}
        self._bots: dict[str, Bot] = {}
        self._lock = threading.Lock()
        self._stream_slots = threading.BoundedSemaphore(MAX_DECIDE_STREAMS)

    def _call_bot(self, hook: str, call: Callable[..., _T], *args: object) -> _T:
        """Run the bot's code; anything it raises becomes INTERNAL with the exception text."""
        try:
            return call(*args)
        except Exception as e:
            _log.exception("%s raised in %s", self.bot.name, hook)
            raise _Refused(_Why.BOT_FAILED, f"{hook} raised {type(e).__name__}: {e}") from e

    def _match(self, match_id: str) -> MatchInfo:
        info = self._matches.get(match_id)
        if info is None:
            raise _Refused(
                _Why.UNKNOWN_MATCH,
                f"unknown match {match_id!r}: no StartMatch for it, or it has ended",
            )
        return info

    def _bot_for(self, match_id: str) -> Bot:
        return self._bots.get(match_id, self.bot)

    @_handler
    def Handshake(
        self, request: pb.HandshakeRequest, context: grpc.ServicerContext
    ) -> pb.HandshakeResponse:
        """Agree on the protocol's major version, say who the bot is, show the seat token."""
        theirs, arena = _wire.handshake_request_from_proto(request)
        if not _wire.speaks_our_major(theirs):
            raise _Refused(
                _Why.WRONG_VERSION,
                f"protocol version mismatch: the arena speaks {theirs or '(none)'}, "
                f"this bot speaks {PROTOCOL_VERSION}; the major versions must match",
            )
        _log.info("handshake from arena %s (protocol %s)", arena or "(unnamed)", theirs)
        from flipflop import __version__  # here: flipflop imports this module

        bot = self.bot
        return _wire.handshake_response(
            _wire.BotIdentity(
                name=str(bot.name),
                version=str(bot.version),
                protocol_version=PROTOCOL_VERSION,
                features=FEATURES,
                runtime=_wire.sdk_runtime(__version__),
            ),
            self._seat_token,
        )

    @_handler
    def StartMatch(
        self, request: pb.StartMatchRequest, context: grpc.ServicerContext
    ) -> pb.StartMatchResponse:
        """Remember the match and call ``Bot.start_match``."""
        info = _decoded(_wire.match_info_from_proto, request)
        with self._lock:
            if info.match_id in self._matches:
                raise _Refused(_Why.DUPLICATE_MATCH, f"match {info.match_id!r} already started")
            self._matches[info.match_id] = info
        try:
            bot = self.bot
            if self._factory is not None:
                bot = self._call_bot("start_match", self._factory)
                with self._lock:
                    self._bots[info.match_id] = bot
            self._call_bot("start_match", bot.start_match, info)
        except _Refused:
            with self._lock:
                self._matches.pop(info.match_id, None)
                self._bots.pop(info.match_id, None)
            raise
        return pb.StartMatchResponse()

    @_handler
    def Decide(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        """Ask the bot for one decision: ``start_turn`` or ``play_turn`` by phase.

        Takes and returns serialised messages: ``_wire`` codes this hot path by hand.
        DecideStream asks each of its decisions here too.
        """
        call = _decoded(_wire.decide_call_from_bytes, request)
        info = self._match(call.match_id)
        obs, legal = call.observation, call.legal
        if obs.seat != info.seat:
            raise _Refused(
                _Why.BAD_REQUEST,
                f"the observation is for seat {obs.seat}, the bot plays seat {info.seat}",
            )
        bot = self._bot_for(call.match_id)
        if obs.phase is Phase.START:
            answer, note = split_note(self._call_bot("start_turn", bot.start_turn, obs, legal))
            if not isinstance(answer, Action):
                raise _Refused(_Why.BOT_FAILED, f"start_turn returned {answer!r}, not an Action")
            actions: Sequence[Action] = (answer,)
        else:
            answer, note = split_note(self._call_bot("play_turn", bot.play_turn, obs, legal))
            if not isinstance(answer, Sequence) or not all(isinstance(a, Action) for a in answer):
                raise _Refused(
                    _Why.BOT_FAILED,
                    f"play_turn returned {answer!r}, not a list of Actions (or a pair with a note)",
                )
            actions = answer
        return _wire.decide_response_bytes(actions, note)

    def DecideStream(
        self, requests: Iterator[bytes], context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        """Answer one match's decisions in turn, each as :meth:`Decide` does.

        Every request must be for the match of the first one. The first decision refused ends
        the stream, with the status Decide would have answered.
        """
        if not self._stream_slots.acquire(blocking=False):
            context.abort(
                _STATUS[_Why.TOO_MANY_STREAMS],
                f"too many decision streams: {MAX_DECIDE_STREAMS} are open, the most at once",
            )
        try:
            match_id = ""
            for request in requests:
                try:
                    match_id = _stream_match(match_id, request)
                except Exception as e:
                    _abort(context, e, "DecideStream")
                # Outside the try: a refused decision has already set the stream's status.
                yield self.Decide(request, context)
        finally:
            self._stream_slots.release()

    @_handler
    def HandEnded(
        self, request: pb.HandEndedRequest, context: grpc.ServicerContext
    ) -> pb.HandEndedResponse:
        """Tell the bot how a hand was settled."""
        match_id, result = _decoded(_wire.hand_ended_request_from_proto, request)
        self._match(match_id)
        self._call_bot("hand_ended", self._bot_for(match_id).hand_ended, result)
        return pb.HandEndedResponse()

    @_handler
    def EndMatch(
        self, request: pb.EndMatchRequest, context: grpc.ServicerContext
    ) -> pb.EndMatchResponse:
        """Tell the bot the match is over, and forget the match."""
        match_id, result = _decoded(_wire.end_match_request_from_proto, request)
        self._match(match_id)
        try:
            self._call_bot("end_match", self._bot_for(match_id).end_match, result)
        finally:
            with self._lock:
                self._matches.pop(match_id, None)
                self._bots.pop(match_id, None)
            _wire.forget_match(match_id)
        return pb.EndMatchResponse()


def _add_bot_service(servicer: _BotServicer, server: grpc.Server) -> None:
    """Register the ``flipflop.v1.Bot`` methods; the decisions pass bytes through (see above)."""

    def method(
        handler: Callable[[Any, grpc.ServicerContext], Any],
        request: type[Message] | None = None,
        response: type[Message] | None = None,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        return grpc.unary_unary_rpc_method_handler(
            handler,
            request_deserializer=request.FromString if request is not None else None,
            response_serializer=response.SerializeToString if response is not None else None,
        )

    handlers = {
        "Handshake": method(servicer.Handshake, pb.HandshakeRequest, pb.HandshakeResponse),
        "StartMatch": method(servicer.StartMatch, pb.StartMatchRequest, pb.StartMatchResponse),
        "Decide": method(servicer.Decide),
        # No (de)serialisers: bytes in and out, as for Decide.
        "DecideStream": grpc.stream_stream_rpc_method_handler(servicer.DecideStream),
        "HandEnded": method(servicer.HandEnded, pb.HandEndedRequest, pb.HandEndedResponse),
        "EndMatch": method(servicer.EndMatch, pb.EndMatchRequest, pb.EndMatchResponse),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("flipflop.v1.Bot", handlers),)
    )


class _HealthServicer(health_grpc.HealthServicer):
    """``grpc.health.v1.Health``: SERVING for the bot service until the server stops."""

    def __init__(self) -> None:
        self.serving = True

    @_handler
    def Check(
        self, request: health_pb.HealthCheckRequest, context: grpc.ServicerContext
    ) -> health_pb.HealthCheckResponse:
        """Answer SERVING (NOT_SERVING while stopping), or NOT_FOUND for an unknown service."""
        if request.service not in _wire.HEALTH_SERVICES:
            raise _Refused(_Why.UNKNOWN_SERVICE, f"unknown service {request.service!r}")
        return _wire.health_response(self.serving)


# ---------------------------------------------------------------------------------- servers


class BotServer:
    """A bot's gRPC server running in this process, on a pool of threads.

    Used by :func:`serve`, by tests and by benchmarks::

        with BotServer(MyBot(), "127.0.0.1:0") as server:
            client = BotClient(server.endpoint)

    Args:
        bot: the bot to host: an instance shared by all matches, or a class (factory) to get
            one instance per match.
        endpoint: ``unix:/abs/path.sock`` or ``host:port``; port 0 picks a free port.
        max_workers: threads answering calls (several matches may be played at once); open
            decision streams have threads of their own on top (:data:`MAX_DECIDE_STREAMS`).
        seat_token: the token to send in every handshake. None (the default): take it from
            ``FLIPFLOP_SEAT_TOKEN``, removing it from ``os.environ``; no token if it is unset.

    Attributes:
        bot: the hosted bot.
        endpoint: where the server listens once started, with the bound port for TCP.
    """

    def __init__(
        self,
        bot: Bot | BotFactory,
        endpoint: str,
        *,
        max_workers: int = 8,
        seat_token: str | None = None,
    ) -> None:
        if seat_token is None:
            seat_token = os.environ.pop(SEAT_TOKEN_ENV, "")
        self._servicer = _BotServicer(bot, seat_token)
        self.bot = self._servicer.bot
        self._requested = Endpoint.parse(endpoint)
        self.endpoint = str(self._requested)
        self._max_workers = max_workers
        self._server: grpc.Server | None = None
        self._health = _HealthServicer()

    def start(self) -> None:
        """Bind the endpoint (removing a stale socket file) and start answering.

        Raises:
            OSError: the endpoint cannot be bound (e.g. another server listens on it).
        """
        if self._server is not None:
            raise RuntimeError("the server is already running")
        requested = self._requested
        if requested.path is not None:
            requested.path.parent.mkdir(parents=True, exist_ok=True)
            _clear_stale_socket(requested.path)
        server = grpc.server(
            # A thread more per open stream: streams never take those of the other calls.
            futures.ThreadPoolExecutor(
                max_workers=self._max_workers + MAX_DECIDE_STREAMS,
                thread_name_prefix="flipflop-bot",
            ),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                # Without this, a second server on a busy TCP port would bind it too (Linux).
                ("grpc.so_reuseport", 0),
            ],
        )
        _add_bot_service(self._servicer, server)
        health_grpc.add_HealthServicer_to_server(self._health, server)
        try:
            port = server.add_insecure_port(requested.target)
        except RuntimeError as e:
            raise OSError(errno.EADDRNOTAVAIL, f"cannot listen: {e}", requested.target) from e
        if requested.path is None:
            if port == 0:
                raise OSError(errno.EADDRINUSE, "cannot listen", requested.target)
            self.endpoint = str(Endpoint(host=requested.host, port=port))
        self._health.serving = True
        server.start()
        self._server = server
        _log.info("%s listening on %s", self.bot.name, self.endpoint)

    def stop(self, grace: float | None = 2.0) -> None:
        """Stop answering (calls in flight get ``grace`` seconds), then remove the socket file."""
        server, self._server = self._server, None
        if server is None:
            return
        self._health.serving = False
        server.stop(grace).wait()
        if self._requested.path is not None:
            self._requested.path.unlink(missing_ok=True)
        _log.info("%s stopped", self.bot.name)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _listen_argument(argv: Sequence[str]) -> str | None:
    """The value of ``--listen X`` or ``--listen=X`` in ``argv``, if any."""
    for i, arg in enumerate(argv):
        if arg == "--listen" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--listen="):
            return arg[len("--listen=") :]
    return None


def serve(bot: Bot | BotFactory, listen: str | None = None, *, grace: float = 2.0) -> None:
    """Serve ``bot`` until SIGTERM or SIGINT, then shut down cleanly and return.

    The endpoint is ``listen``, else the ``--listen`` argument of the command line, else the
    ``FLIPFLOP_LISTEN`` environment variable, else :data:`DEFAULT_ENDPOINT`. A stale socket
    file is removed first. The seat token is taken from ``FLIPFLOP_SEAT_TOKEN`` (and removed
    from the environment): see the module docstring. Once listening, one line
    ``serving <name> on <endpoint>`` goes to stdout; logs go to stderr. On a signal the health
    check turns NOT_SERVING, calls in flight get ``grace`` seconds, and the socket file is
    removed.

    Args:
        bot: the bot to serve: an instance shared by every match, or a class (any factory)
            to give each match its own instance.
        listen: the endpoint, ``unix:/abs/path.sock`` or ``host:port``.
        grace: seconds calls in flight may take to finish at shutdown.
    """
    endpoint = (
        listen or _listen_argument(sys.argv[1:]) or os.environ.get(LISTEN_ENV) or DEFAULT_ENDPOINT
    )
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO,
            stream=sys.stderr,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _log.info("received %s, shutting down", signal.Signals(signum).name)
        stop.set()

    server = BotServer(bot, endpoint)
    server.start()
    previous: dict[signal.Signals, Any] = {}
    try:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, on_signal)
        print(f"serving {server.bot.name} on {server.endpoint}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop(grace)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
