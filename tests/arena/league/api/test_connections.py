"""Slow and greedy clients against the league's HTTP server (``arena/executors/_connections.py``).

The first tests serve an app with ``serve_in_thread`` (real uvicorn, real sockets) and small
limits; the last starts a real ``arena league serve`` with a low descriptor limit, playing
matches, and holds a thousand slow-header connections against it from twenty addresses
(issue 24, finding 4).
"""

from __future__ import annotations

import errno
import json
import resource
import selectors
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from arena.executors._connections import ConnectionLimits, client_key
from arena.executors._http import serve_in_thread
from arena.league import League, MatchStatus
from tests.arena.league.test_executor import add_versions, bundled, matches, new_league
from tests.served import WAIT_S, arena_command, free_port, is_healthy, stop_server, wait_for

HEAD = b"GET /ok HTTP/1.1\r\nHost: test\r\n"
"""A request's head without its blank line: the server waits for the rest."""
CLOSED_WITHIN_S = 30.0
"""How long a test waits for the server to close a connection it should close."""


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/ok")
    def ok() -> dict[str, bool]:
        return {"ok": True}

    return app


@contextmanager
def served(limits: ConnectionLimits) -> Iterator[int]:
    """A small app on a real socket with ``limits``; its port."""
    with serve_in_thread(_app(), limits=limits) as url:
        yield int(url.rsplit(":", 1)[1])


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A connection to the server from the address ``source``."""
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(CLOSED_WITHIN_S)
    sock.connect(("127.0.0.1", port))
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (waits up to ``CLOSED_WITHIN_S`` for it)."""
    try:
        while chunk := sock.recv(65536):
            if b"HTTP/1.1" in chunk:
                return False  # it answered instead
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def ask(sock: socket.socket) -> bytes:
    """Send a whole request on ``sock``; the first bytes of the answer."""
    sock.sendall(HEAD + b"\r\n")
    return sock.recv(65536)


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off_at_the_deadline() -> None:
    """Bytes that keep coming do not keep a head alive: the deadline counts from the start."""
    with served(ConnectionLimits(header_timeout=1.0)) as port, connect(port) as sock:
        sock.sendall(HEAD)
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < CLOSED_WITHIN_S:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            sock.settimeout(0.2)
            try:
                if sock.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except ConnectionResetError:
                closed = True
                break
    assert closed, "the server kept a head trickling in for 30 s"


def test_a_silent_connection_is_closed_at_the_head_deadline() -> None:
    """A connection that sends nothing is closed once its head is late."""
    with served(ConnectionLimits(header_timeout=1.0)) as port, connect(port) as sock:
        assert closed_by_server(sock)


def test_an_idle_connection_is_closed_after_the_keep_alive() -> None:
    """After an answer, a connection that sends no next request is closed (keep-alive)."""
    limits = ConnectionLimits(keep_alive=1, header_timeout=60.0)
    with served(limits) as port, connect(port) as sock:
        assert ask(sock).startswith(b"HTTP/1.1 200")
        assert closed_by_server(sock)


def test_a_client_past_its_share_is_refused_while_others_are_served() -> None:
    """With every connection of one address busy, its next is closed; another address is served.

    Busy connections (their head received, the app at work on a streamed answer) are never
    closed to make room.
    """
    app = FastAPI()
    release = threading.Event()
    arrived: list[int] = []

    @app.get("/ok")
    def ok() -> dict[str, bool]:
        arrived.append(1)
        release.wait(CLOSED_WITHIN_S)
        return {"ok": True}

    with serve_in_thread(app, limits=ConnectionLimits(per_client=3)) as url:
        port = int(url.rsplit(":", 1)[1])
        busy = [connect(port) for _ in range(3)]
        try:
            for sock in busy:
                sock.sendall(HEAD + b"\r\n")
            wait_for("three requests in the app", lambda: len(arrived) >= 3, timeout=60)
            with connect(port) as extra:
                assert closed_by_server(extra)
            with connect(port, "127.0.0.2") as other:
                release.set()
                assert ask(other).startswith(b"HTTP/1.1 200")
        finally:
            release.set()
            for sock in busy:
                sock.close()


def test_a_newcomer_past_the_cap_closes_the_connection_waiting_longest() -> None:
    """At the cap, a new connection closes the one that has waited longest for its request."""
    with served(ConnectionLimits(max_connections=3, per_client=0)) as port:
        oldest, second, third = (connect(port, f"127.0.0.{i}") for i in (2, 3, 4))
        try:
            for sock in (oldest, second, third):
                sock.sendall(HEAD)  # waiting for the rest of their heads
            with connect(port, "127.0.0.5") as newcomer:
                assert ask(newcomer).startswith(b"HTTP/1.1 200")
            assert closed_by_server(oldest)
            second.sendall(b"\r\n")
            assert second.recv(65536).startswith(b"HTTP/1.1 200")
        finally:
            for sock in (oldest, second, third):
                sock.close()


def test_client_key_counts_an_ipv6_64_as_one_client() -> None:
    """IPv4 addresses are their own; IPv6 ones count by /64, IPv4-mapped ones as IPv4."""
    assert "192.0.2.7" == client_key("192.0.2.7")
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert "192.0.2.7" == client_key("::ffff:192.0.2.7")


# ---------------------------------------------------------------------- arena league serve

NOFILE = 1024
"""The server's descriptor limit in the test (soft and hard): the audit's."""
ATTACKERS = 1000
SOURCES = [f"127.0.0.{i}" for i in range(2, 22)]
"""Twenty addresses, fifty connections each: within the per-client cap, past the server's."""
ATTACK_S = 20.0
HEADER_TIMEOUT = 3


def _open_descriptors(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


class _Crowd:
    """``ATTACKERS`` slow-header connections, each opened again when the server closes it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.opened = 0
        self.closed_by_server = 0
        self.failed_connects = 0

    def open_one(self, index: int) -> None:
        sock = socket.socket()
        try:
            sock.bind((SOURCES[index % len(SOURCES)], 0))
            sock.setblocking(False)
            code = sock.connect_ex(("127.0.0.1", self.port))
            if code not in (0, errno.EINPROGRESS):
                raise OSError(code, "connect")
        except OSError:
            sock.close()
            self.failed_connects += 1
            return
        self.opened += 1
        self.selector.register(sock, selectors.EVENT_READ, [index, False])

    def start(self) -> None:
        for index in range(ATTACKERS):
            self.open_one(index)

    def dribble(self) -> None:
        """One more header line on every connection; reopen the ones the server closed."""
        for key in list(self.selector.get_map().values()):
            sock, (index, _) = key.fileobj, key.data
            assert isinstance(sock, socket.socket)
            try:
                if not key.data[1]:
                    sock.send(HEAD)
                    key.data[1] = True
                else:
                    sock.send(b"X-Slow: 1\r\n")
            except (BlockingIOError, InterruptedError):
                continue  # still connecting
            except OSError:
                self._closed(sock, index)

    def reap(self, timeout: float) -> None:
        """Note the connections the server closed within ``timeout`` s, and reopen them."""
        for key, _ in self.selector.select(timeout):
            sock, (index, _) = key.fileobj, key.data
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                self._closed(sock, index)

    def _closed(self, sock: socket.socket, index: int) -> None:
        self.selector.unregister(sock)
        sock.close()
        self.closed_by_server += 1
        self.open_one(index)

    def close(self) -> None:
        for key in list(self.selector.get_map().values()):
            fileobj = key.fileobj
            assert isinstance(fileobj, socket.socket)
            fileobj.close()
        self.selector.close()


@pytest.fixture
def league(tmp_path: Path) -> Iterator[League]:
    """A league home with four house bots of four owners, on SQLite.

    The database plays no part in how connections are handled: one kind is enough.
    """
    with new_league("sqlite", tmp_path) as made:
        add_versions(made, [bundled(n) for n in ("random", "greedy", "counter", "random")])
        yield made


def _enough_descriptors_here() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = ATTACKERS * 2 + 256
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"the test needs {need} descriptors of its own; its hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


@pytest.mark.slow
def test_a_thousand_slow_clients_neither_exhaust_descriptors_nor_stop_the_league(
    league: League, tmp_path: Path
) -> None:
    """1,000 slow-header connections from 20 addresses against a server with 1,024 descriptors.

    For 20 s the crowd sends a header line per connection every second and reconnects
    whenever the server closes one. Meanwhile the server's descriptors stay well below its
    limit, it answers every health check from another address (on a kept connection and on
    new ones), and it keeps playing matches, none of them void.
    """
    _enough_descriptors_here()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    command = arena_command(
        "league", "serve", str(league.home), "--sandbox", "process-unsafe", "--port", str(port),
        "--slots", "2", "--hand-cap", "10", "--header-timeout", str(HEADER_TIMEOUT),
    )  # fmt: skip
    with open(log, "ab") as err:
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=low_limit
        )
    crowd = _Crowd(port)
    try:
        wait_for("the server's health check", lambda: is_healthy(url, proc))
        wait_for("a finished match", lambda: MatchStatus.FINISHED in _statuses(league))
        finished_before = _finished(league)
        baseline = _open_descriptors(proc.pid)
        crowd.start()
        descriptors: list[int] = []
        latencies: list[float] = []
        answers: list[int | str] = []
        started = next_health = time.monotonic()
        with httpx.Client(timeout=30) as client:
            while time.monotonic() - started < ATTACK_S:
                crowd.dribble()
                crowd.reap(0.5)
                descriptors.append(_open_descriptors(proc.pid))
                if time.monotonic() >= next_health:
                    # Every other check on a new connection: a client arriving mid-attack.
                    fresh = {"Connection": "close"} if len(answers) % 2 else {}
                    asked = time.monotonic()
                    try:
                        health = client.get(f"{url}/api/v1/health", headers=fresh)
                        answers.append(health.status_code)
                    except httpx.HTTPError as e:
                        answers.append(type(e).__name__)
                    latencies.append(time.monotonic() - asked)
                    next_health = time.monotonic() + 1.0
            # The matches go on: one more finishes while the crowd is still there.
            deadline = time.monotonic() + WAIT_S
            while _finished(league) == finished_before and time.monotonic() < deadline:
                crowd.dribble()
                crowd.reap(0.5)
        finished_during = _finished(league) - finished_before
        assert proc.poll() is None
    finally:
        crowd.close()
        stop_server(proc)
    records = [
        json.loads(line) for line in log.read_text().splitlines()[1:] if line.startswith("{")
    ]
    summaries = [r["connections"] for r in records if "connections" in r]
    print(
        f"\nbaseline {baseline} descriptors; during the attack max {max(descriptors)},"
        f" median {statistics.median(descriptors):.0f} of {NOFILE};"
        f" health p50 {statistics.median(latencies) * 1000:.0f} ms,"
        f" max {max(latencies) * 1000:.0f} ms over {len(latencies)} checks;"
        f" crowd opened {crowd.opened}, closed by the server {crowd.closed_by_server},"
        f" failed connects {crowd.failed_connects}; {finished_during} matches finished;"
        f" server summaries: {summaries}"
    )
    assert [200] * len(answers) == answers
    assert finished_during >= 1, "no match finished during the attack"
    assert max(descriptors) < NOFILE - 128, "the server came near its descriptor limit"
    assert crowd.closed_by_server >= ATTACKERS, "the server held the slow connections"
    void = [m.id for m in matches(league) if m.result is not None and m.result.get("void")]
    assert [] == void


def _statuses(league: League) -> set[MatchStatus]:
    return {m.status for m in matches(league)}


def _finished(league: League) -> int:
    return sum(1 for m in matches(league) if m.status is MatchStatus.FINISHED)
