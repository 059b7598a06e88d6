"""What a request must pass before the application reads it: its body's size, a worker's token.

:class:`Gate` is the ASGI middleware in front of the league's API and pages
(:func:`arena.league.api._routes.create_app` installs it):

- **Every body has a limit**, chosen by route (:class:`BodyLimit`; :data:`MAX_BODY_BYTES`
  for a route that names none). A declared ``Content-Length`` past it is refused (413) before
  the application runs; a body sent without one (chunked) is counted as it streams, and the
  read that goes past the limit fails (:class:`BodyTooLarge`): no route ever holds more than
  its limit, nor parses a byte past it. The answer closes the connection, so the rest of the
  body is never read either.
- **A worker's token is checked before its body is read.** FastAPI reads and parses a JSON
  body before it runs a route's dependencies, so a worker route's token used to be checked
  only once a stranger's whole body was in memory. The gate checks the token of every path
  under the workers' prefix first, and the route's dependency takes the name it found.
- **Wrong tokens are throttled per client** (:class:`TokenThrottle`), users' and workers'
  alike: past :data:`FAILED_TOKEN_BURST` failures, a client (IPv4 address, IPv6 /64) may fail
  :data:`FAILED_TOKENS_PER_SECOND` more a second, and any request with a token beyond that
  is answered 429 with ``Retry-After``, before any database lookup.

Its refusals are ``{"error": sentence}`` under ``/api/`` and a small page elsewhere.

An upload's body (a bot's archive, a worker's replay or log) is read by :func:`read_upload`,
the same limit checked as it streams, for the users' and the workers' routes alike.
"""

from __future__ import annotations

import html
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from re import Pattern

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena._errors import LeagueError, NotAuthenticated
from arena.executors._connections import client_key

__all__ = [
    "FAILED_TOKENS_PER_SECOND",
    "FAILED_TOKEN_BURST",
    "MAX_BODY_BYTES",
    "MAX_WORKER_JSON_BYTES",
    "THROTTLED_CLIENTS",
    "WORKER_STATE",
    "BodyLimit",
    "BodyTooLarge",
    "Gate",
    "TokenThrottle",
    "TooManyFailures",
]

MAX_BODY_BYTES = 64 * 1024
"""The body of a route that names no limit of its own: forms, and routes that take none."""
MAX_WORKER_JSON_BYTES = 16 * 1024 * 1024
"""A worker's JSON body: a result, or a validation step's end with its whole log."""
FAILED_TOKEN_BURST = 100
"""Wrong tokens a client may send before it is throttled."""
FAILED_TOKENS_PER_SECOND = 1.0
"""Wrong tokens a throttled client may send each second (its allowance grows back so)."""
THROTTLED_CLIENTS = 10_000
"""Clients whose failures are remembered at most: the oldest is forgotten past it."""
WORKER_STATE = "worker"
"""The key of ``request.state`` under which the gate leaves the worker's name."""

Check = Callable[[str | None], str]
"""A worker's token check: the name of the worker an Authorization header belongs to."""


class BodyTooLarge(LeagueError):
    """A request body past its route's limit."""

    status_code = 413


class TooManyFailures(LeagueError):
    """A client that sent too many wrong tokens: it is answered 429 until it may try again.

    Attributes:
        retry_after: whole seconds until the client may send a token again.
    """

    status_code = 429

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many wrong tokens from this address: try again in {retry_after} s")
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class BodyLimit:
    """The largest body one route takes.

    Attributes:
        method: the route's method (``"*"`` for any).
        path: the route's path, as routes write it (``/api/v1/bots/{name}/versions``).
        max_bytes: the most bytes its body may have.
        what: what the body is, for the refusal's sentence.
    """

    method: str
    path: str
    max_bytes: int
    what: str = "the request body"
    _pattern: Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pattern", compile_path(self.path)[0])

    def matches(self, method: str, path: str) -> bool:
        """Whether a request for ``method`` ``path`` goes to this route."""
        return self.method in ("*", method) and self._pattern.match(path) is not None

    def refusal(self) -> str:
        """The sentence a body past this limit is refused with."""
        return f"{self.what} is larger than {self.max_bytes} bytes, the most this league accepts"


class TokenThrottle:
    """Counts each client's wrong tokens; refuses a client that sent too many.

    Each client has an allowance of ``burst`` failures that grows back by ``per_second``
    (a token bucket). Memory is bounded: at most ``clients`` are remembered, the one whose
    last failure is oldest forgotten first. Thread-safe: the API's dependencies run in
    threads.
    """

    def __init__(
        self,
        *,
        burst: int = FAILED_TOKEN_BURST,
        per_second: float = FAILED_TOKENS_PER_SECOND,
        clients: int = THROTTLED_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst = burst
        self.per_second = per_second
        self.clients = clients
        self._clock = clock
        self._lock = threading.Lock()
        self._left: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def check(self, client: str) -> None:
        """Refuse ``client`` if it has no failure left to spend.

        Raises:
            TooManyFailures: it must wait; the error says how long.
        """
        with self._lock:
            left = self._allowance(client, self._clock())
        if left < 1:
            raise TooManyFailures(max(1, math.ceil((1 - left) / self.per_second)))

    def failed(self, client: str) -> None:
        """``client`` sent a wrong token: spend one of its failures."""
        with self._lock:
            now = self._clock()
            self._left[client] = (self._allowance(client, now) - 1, now)
            self._left.move_to_end(client)
            while len(self._left) > self.clients:
                self._left.popitem(last=False)

    def _allowance(self, client: str, now: float) -> float:
        if client not in self._left:
            return float(self.burst)
        left, since = self._left[client]
        return min(float(self.burst), left + (now - since) * self.per_second)


def address(scope: Scope) -> str:
    """The key of the client of ``scope`` for per-client limits (``client_key``)."""
    client = scope.get("client")
    return client_key(client[0] if client else None)


class Gate:
    """The ASGI middleware that bounds bodies and checks workers' tokens first (module doc)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: Sequence[BodyLimit],
        throttle: TokenThrottle,
        worker_prefix: str,
        check_worker: Check,
        api_prefix: str = "/api/",
    ) -> None:
        self.app = app
        self.limits = tuple(limits)
        self.default = BodyLimit("*", "/", MAX_BODY_BYTES)
        self.throttle = throttle
        self.worker_prefix = worker_prefix.rstrip("/") + "/"
        self.check_worker = check_worker
        self.api_prefix = api_prefix

    def limit(self, method: str, path: str) -> BodyLimit:
        """The limit of the route a request for ``method`` ``path`` goes to."""
        return next((x for x in self.limits if x.matches(method, path)), self.default)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse what is too large or unauthenticated; pass the rest on, its body counted."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope["method"], scope["path"])
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit.max_bytes:
            await self._refuse(scope, receive, send, BodyTooLarge(limit.refusal()))
            return
        if scope["path"].startswith(self.worker_prefix):
            try:
                name = await self._worker(scope, headers.get("authorization"))
            except LeagueError as e:
                await self._refuse(scope, receive, send, e)
                return
            scope.setdefault("state", {})[WORKER_STATE] = name
        await _Counted(self, limit, scope, receive, send).run()

    async def _worker(self, scope: Scope, authorization: str | None) -> str:
        """The worker's name, its token checked (and throttled) before any body is read."""
        if authorization is None:
            return self.check_worker(None)  # raises: a worker route needs a token
        client = address(scope)
        self.throttle.check(client)
        try:
            return await run_in_threadpool(self.check_worker, authorization)
        except NotAuthenticated:
            self.throttle.failed(client)
            raise

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, error: LeagueError) -> None:
        await self.answer(scope, error)(scope, receive, send)

    def answer(self, scope: Scope, error: LeagueError) -> Response:
        """The gate's answer to ``error``; it closes the connection (a body may be unread)."""
        status = getattr(error, "status_code", 400)
        headers = {"Connection": "close"}
        if status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if isinstance(error, TooManyFailures):
            headers["Retry-After"] = str(error.retry_after)
        if scope["path"].startswith(self.api_prefix):
            return JSONResponse({"error": str(error)}, status_code=status, headers=headers)
        page = (
            "<!doctype html><meta charset=utf-8><title>Refused</title>"
            '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
            '<link rel="stylesheet" href="/static/site.css">'
            f"<main><h1>Refused</h1><p>{html.escape(str(error))}</p>"
            '<p><a href="/">The leaderboard</a></p></main>'
        )
        return HTMLResponse(page, status_code=status, headers=headers)


class _Counted:
    """One request passed on with its body counted against ``limit`` as it streams."""

    def __init__(self, gate: Gate, limit: BodyLimit, scope: Scope, receive: Receive, send: Send):
        self.gate, self.limit, self.scope = gate, limit, scope
        self._receive, self._send = receive, send
        self.received = 0
        self.tripped = False  # the body went past the limit
        self.started = False  # an answer went out
        self.swallowed = False  # the application's answer is replaced by the gate's 413

    async def run(self) -> None:
        try:
            await self.gate.app(self.scope, self.receive, self.send)
        except Exception:
            if not self.tripped or self.started:
                raise
        if self.tripped and not self.started:
            error = BodyTooLarge(self.limit.refusal())
            await self.gate.answer(self.scope, error)(self.scope, self._receive, self._send)

    async def receive(self) -> Message:
        if self.tripped:
            raise BodyTooLarge(self.limit.refusal())
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit.max_bytes:
                self.tripped = True
                raise BodyTooLarge(self.limit.refusal())
        return message

    async def send(self, message: Message) -> None:
        if self.tripped and not self.started:
            if message["type"] == "http.response.start" and message["status"] != 413:
                # The application made something else of the failed read (FastAPI: "There
                # was an error parsing the body", 400): the gate answers 413 itself.
                self.swallowed = True
            if self.swallowed:
                return
            if message["type"] == "http.response.start":
                # The rest of the body is never read: the connection cannot be used again.
                closing = [*message.get("headers", []), (b"connection", b"close")]
                message = {**message, "headers": closing}
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


# ------------------------------------------------------------------ uploads
