"""The HTTP pieces every server of the arena shares: the league's API and a ladder's workers'.

- :func:`serve_in_thread`: an application on a real socket, in a thread, its connections
  bounded as ``arena league serve`` bounds them (``_connections``);
- :func:`add_error_handlers`: every error as ``{"error": sentence}``, an
  :class:`~arena._errors.LeagueError` with its own status code;
- :func:`read_upload`: an upload's body, refused past its limit as it streams;
- :func:`bearer_token`: the token of an ``Authorization: Bearer`` header.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from arena._errors import LeagueError, NotAuthenticated, UploadRejected
from arena.executors._connections import ConnectionLimits, server_config

__all__ = [
    "UPLOAD_TYPES",
    "UnsupportedUpload",
    "UploadTooLarge",
    "add_error_handlers",
    "bearer_token",
    "error_response",
    "read_upload",
    "serve_in_thread",
]

log = logging.getLogger(__name__)

_BEARER = {"WWW-Authenticate": "Bearer"}


def bearer_token(header: str | None, refused: str) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header; None without a header.

    Raises:
        NotAuthenticated: another scheme, with the sentence ``refused``.
    """
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise NotAuthenticated(refused)
    return token.strip()


def error_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def add_error_handlers(app: FastAPI) -> None:
    """Every error as ``{"error": sentence}``, league errors with their own status code."""

    @app.exception_handler(LeagueError)
    async def league_error(request: Request, exc: LeagueError) -> JSONResponse:
        status = getattr(exc, "status_code", 400)
        if status >= 500:
            log.error("%s %s: %s", request.method, request.url.path, exc)
        headers = dict(_BEARER) if status == 401 else {}
        retry_after = getattr(exc, "retry_after", None)  # a throttled client's (429)
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        return error_response(status, str(exc), headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = f"no such endpoint: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"{request.url.path} does not take {request.method}"
        else:
            message = str(exc.detail)
        return error_response(exc.status_code, message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, _validation_sentence(exc.errors()))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        # Starlette raises the exception again once this answer is sent: the server logs it.
        return error_response(500, "the league failed to answer this request (an internal error)")


def _validation_sentence(errors: Sequence[Any]) -> str:
    """The first of FastAPI's validation errors, as a sentence: where and what."""
    if not errors:
        return "the request is malformed"
    first = errors[0]
    where = " ".join(str(p) for p in first.get("loc", ()) if p not in ("path", "query", "body"))
    return f"{where or 'the request'}: {first.get('msg', 'invalid')}"


@contextmanager
def serve_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout: float = 60.0,
    limits: ConnectionLimits | None = None,
) -> Iterator[str]:
    """Run ``app`` with uvicorn on a real socket, in a thread; yield its base URL.

    ``port=0`` takes a free port. The server stops (and the thread ends) when the block ends.
    It bounds its connections as ``arena league serve`` does (``_connections.py``), with
    ``limits`` (default ``ConnectionLimits()``).

    Example::

        with serve_in_thread(create_app(league)) as url:
            print(httpx.get(f"{url}/api/v1/health").json())

    Raises:
        RuntimeError: the server did not start within ``startup_timeout`` seconds.
    """
    config = server_config(
        app,
        host=host,
        port=port,
        limits=limits,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{host}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError(f"the HTTP server on {host}:{port} did not start")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP server on {host}:{port} did not start in time")
            time.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname()
        yield f"http://{bound[0]}:{bound[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=startup_timeout)


UPLOAD_TYPES = frozenset({"application/gzip", "application/x-gzip", "application/octet-stream"})
"""The content types an upload may be sent as (a tar.gz either way)."""


class UploadTooLarge(UploadRejected):
    """An upload past the league's ``max_compressed_bytes``, refused before it is unpacked."""

    status_code = 413


class UnsupportedUpload(UploadRejected):
    """An upload sent as something other than a gzip-compressed tar archive."""

    status_code = 415


async def read_upload(request: Request, limit: int) -> bytes:
    """The request body, refused past ``limit`` bytes (by its Content-Length, then as it comes).

    Raises:
        UnsupportedUpload: a content type that is not a gzip archive's.
        UploadTooLarge: more than ``limit`` bytes, declared or sent.
        LeagueError: a Content-Length that is not a number.
    """
    kind = request.headers.get("content-type", "application/gzip").split(";")[0].strip().lower()
    if kind not in UPLOAD_TYPES:
        raise UnsupportedUpload(
            f"an upload is a tar.gz sent as application/gzip, not {kind or 'untyped'}"
        )
    too_large = UploadTooLarge(
        f"the upload is larger than {limit} bytes, the most this league accepts"
    )
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise LeagueError(f"Content-Length must be a number of bytes (got {declared!r})")
        if int(declared) > limit:
            raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        # Checked as the bytes come too: a chunked body declares no length.
        if len(body) > limit:
            raise too_large
    return bytes(body)
