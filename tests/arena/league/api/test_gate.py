"""The gate in front of the API (``arena/league/api/_gate.py``), attacked over a real socket.

A league on SQLite is served by ``create_app`` under uvicorn (``serve_in_thread``). Bodies
are sent chunked and never finished (``tests/served.py``'s ``answer_before_the_end``): a
server that reads a body whole before deciding never answers one, so each test tells
whether the server decided before the end of the body (issue 24, findings 3 and 16).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from arena.executors._http import serve_in_thread
from arena.league import League, init_league
from arena.league.api._gate import (
    FAILED_TOKEN_BURST,
    MAX_BODY_BYTES,
    MAX_WORKER_JSON_BYTES,
    TokenThrottle,
    TooManyFailures,
)
from arena.league.api._routes import create_app
from tests.arena.league.api.test_api import _worker_token, user_token
from tests.served import answer_before_the_end

MIB = b"\x00" * (1024 * 1024)


@dataclass(frozen=True)
class Served:
    """The league, its server's URL, a user's and a worker's token."""

    league: League
    url: str
    user: str
    worker: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A new league with one user and one worker, its API on a real socket."""
    league, _ = init_league(tmp_path_factory.mktemp("gate") / "home", name="gate")
    try:
        user, worker = user_token(league, "alice"), _worker_token(league, "box1")
        # The throttle's clock stands still: no failure comes back during the test, however
        # slow the machine (its refill has a test of its own, below).
        throttle = TokenThrottle(clock=lambda: 0.0)
        with serve_in_thread(create_app(league, throttle=throttle)) as url:
            yield Served(league, url, user, worker)
    finally:
        league.close()


def head(method: str, path: str, *headers: str) -> bytes:
    """A chunked request's head with ``headers`` (``Name: value``)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: test", "Transfer-Encoding: chunked", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer ffw_" + "A" * 43, "Bearer nonsense"],
    ids=["no token", "unknown token", "malformed token"],
)
def test_a_strangers_body_to_a_worker_route_is_refused_before_it_is_read(
    served: Served, authorization: str | None
) -> None:
    """A worker route's token is checked first: a stranger's JSON body is never read (401).

    Before, FastAPI read and parsed the whole body, then ran the token check: a chunked
    300 MB body cost the audited server 1.16 GB.
    """
    extra = [] if authorization is None else [f"Authorization: {authorization}"]
    request = head(
        "POST", "/api/v1/worker/matches/1/result", "Content-Type: application/json", *extra
    )
    status, _ = answer_before_the_end(served.url, request, [b"[" + MIB] + [MIB] * 3)
    assert 401 == status


def test_a_workers_body_past_its_limit_is_refused_as_it_streams(served: Served) -> None:
    """Even a worker's JSON is cut off at MAX_WORKER_JSON_BYTES: 413 before the body ends."""
    request = head(
        "POST",
        "/api/v1/worker/matches/1/result",
        "Content-Type: application/json",
        f"Authorization: Bearer {served.worker}",
    )
    parts = [b"[" + MIB] + [MIB] * (MAX_WORKER_JSON_BYTES // len(MIB) + 1)
    status, sent = answer_before_the_end(served.url, request, parts)
    assert 413 == status
    assert sent > MAX_WORKER_JSON_BYTES


def test_a_declared_body_past_the_routes_limit_is_refused_before_the_route_runs(
    served: Served,
) -> None:
    """A route that names no limit takes MAX_BODY_BYTES; a longer declared one is 413 at once.

    The answer closes the connection: the body is never read.
    """
    declared = httpx.post(
        f"{served.url}/api/v1/bots/alpha/disable",
        content=b"x" * (MAX_BODY_BYTES + 1),
        timeout=60,
    )
    assert 413 == declared.status_code
    assert f"larger than {MAX_BODY_BYTES} bytes" in declared.json()["error"]
    assert "close" == declared.headers["connection"]


@pytest.fixture
def statements(served: Served) -> Iterator[list[str]]:
    """The SQL statements the served league runs while the test does."""
    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(served.league.engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(served.league.engine, "before_cursor_execute", note)


def _guess() -> str:
    """A well-formed API token nobody was given (its check is a database lookup)."""
    return "ffa_" + secrets.token_urlsafe(32)


def test_wrong_tokens_are_throttled_per_client_before_any_lookup(
    served: Served, statements: list[str]
) -> None:
    """Past FAILED_TOKEN_BURST wrong tokens a client gets 429 and Retry-After, no lookup.

    Users' and workers' tokens count alike; another address is not throttled.
    """
    source = "127.0.0.3"
    with httpx.Client(
        base_url=served.url, timeout=60, transport=httpx.HTTPTransport(local_address=source)
    ) as guesser:
        answers = [
            guesser.get("/api/v1/me", headers={"Authorization": f"Bearer {_guess()}"}).status_code
            for _ in range(FAILED_TOKEN_BURST - 1)
        ]
        worker = guesser.get(
            "/api/v1/worker/me", headers={"Authorization": "Bearer ffw_" + "B" * 43}
        )
        assert [401] * (FAILED_TOKEN_BURST - 1) == answers
        assert 401 == worker.status_code
        looked_up = len(statements)
        throttled = [
            guesser.get(path, headers={"Authorization": f"Bearer {token}"})
            for path, token in (
                ("/api/v1/me", _guess()),
                ("/api/v1/me", served.user),
                ("/api/v1/worker/me", served.worker),
            )
        ]
        assert [429, 429, 429] == [r.status_code for r in throttled]
        assert looked_up == len(statements)
        for answer in throttled:
            assert int(answer.headers["retry-after"]) >= 1
            assert answer.json()["error"].startswith("too many wrong tokens from this address")
    with httpx.Client(
        base_url=served.url, timeout=60, transport=httpx.HTTPTransport(local_address="127.0.0.4")
    ) as other:
        headers = {"Authorization": f"Bearer {served.user}"}
        assert 200 == other.get("/api/v1/me", headers=headers).status_code
        wrong = {"Authorization": f"Bearer {_guess()}"}
        assert 401 == other.get("/api/v1/me", headers=wrong).status_code


def test_the_throttle_lets_a_client_fail_again_as_time_passes() -> None:
    """The allowance grows back at the set rate, never past the burst."""
    now = [0.0]
    throttle = TokenThrottle(burst=2, per_second=0.5, clock=lambda: now[0])
    throttle.failed("a")
    throttle.failed("a")
    with pytest.raises(TooManyFailures) as refused:
        throttle.check("a")
    assert 2 == refused.value.retry_after
    now[0] = 2.0
    throttle.check("a")
    throttle.failed("a")
    with pytest.raises(TooManyFailures):
        throttle.check("a")
    now[0] = 1000.0
    throttle.failed("a")
    throttle.check("a")  # back to the burst (2), one spent


def test_the_throttle_remembers_a_bounded_number_of_clients() -> None:
    """Past ``clients``, the client whose last failure is oldest is forgotten."""
    throttle = TokenThrottle(burst=1, clients=3, clock=lambda: 0.0)
    for client in ("a", "b", "c", "d"):
        throttle.failed(client)
    throttle.check("a")  # forgotten: a fresh allowance
    for client in ("b", "c", "d"):
        with pytest.raises(TooManyFailures):
            throttle.check(client)
