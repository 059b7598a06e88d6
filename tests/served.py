"""Real servers for the tests: ``arena league serve`` in a subprocess, and a Redis broker.

A free port, starting a server, its health, stopping it; a ``redis-server`` of a test's own
(:class:`RedisServer`); waiting for something to become true (:func:`wait_for`). Shared by
the league's server tests (``tests/arena/league``), the fleet's (``tests/arena/executors``),
the web tests' seeded league (``tests/arena/web/seed.py``) and ``scripts/screenshots.py``;
pytest finds it because the repository root is on its ``pythonpath`` (``pyproject.toml``).
"""

from __future__ import annotations

import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import redis

WAIT_S = 180.0
"""How long a test waits for what it awaits (a loaded machine may be very slow)."""
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
STOP_S = 60.0
"""How long :func:`stop_server` waits after SIGTERM before it kills the server."""


class ServerExited(RuntimeError):
    """The server process ended while it was awaited."""


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def arena_command(*args: str) -> list[str]:
    """The command line that runs ``arena ARGS`` with this interpreter."""
    return [sys.executable, "-c", "from arena.cli import main; main()", *args]


def start_server(home: Path, port: int, log: Path, *options: str) -> subprocess.Popen[bytes]:
    """Start ``arena league serve HOME`` (process sandbox) with ``options``; stderr to ``log``."""
    command = arena_command(
        "league", "serve", str(home), "--sandbox", "process-unsafe", "--port", str(port), *options
    )
    with open(log, "ab") as err:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)


@contextmanager
def short_tmpdir() -> Iterator[Path]:
    """A new directory with a short path in the system's temporary directory, removed after.

    For a served league's ``TMPDIR``: its bots' unix sockets live in its scratch there, and a
    socket's path must stay under 108 bytes, which a test's ``tmp_path`` under pytest-xdist
    (``/tmp/pytest-of-root/pytest-N/popen-gwN/test_…``) leaves no room for.
    """
    path = Path(tempfile.mkdtemp(prefix="tsrv-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def scratch_left(tmpdir: Path) -> list[Path]:
    """The arena scratch directories (``arena._scratch``) still in a servers' ``tmpdir``."""
    return sorted(p for p in tmpdir.iterdir() if p.name.startswith("ffa-"))


def is_healthy(url: str, process: subprocess.Popen[bytes]) -> bool:
    """Whether the server at ``url`` answers its health check now.

    Raises:
        ServerExited: ``process`` has exited (it will never answer).
    """
    if process.poll() is not None:
        raise ServerExited(f"the server exited with {process.returncode}")
    try:
        return httpx.get(f"{url}/api/v1/health", timeout=30).status_code == 200
    except httpx.HTTPError:
        return False


def get_json(client: httpx.Client, path: str, process: subprocess.Popen[bytes], log: Path) -> Any:
    """GET ``path`` from the server that ``process`` runs: its JSON.

    A request sent on a kept connection that the server closes under it, at the moment its
    keep-alive ran out, is sent once more (HTTP/1.1 lets a client retry an idempotent request
    so: RFC 9112, 9.3.1); the connection pool opens a new one. A server that has exited, or a
    second failure, fails the test with the server's exit status and the end of its ``log``:
    a report that would otherwise end with the transport's error alone.
    """
    for attempt in (1, 2):
        try:
            return client.get(path).json()
        except httpx.TransportError as e:
            if process.poll() is not None or attempt == 2:
                status = "running" if process.poll() is None else f"exited {process.returncode}"
                tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
                pytest.fail(f"GET {path}: {e!r}; the server: {status}; its log ends:\n{tail}")
    raise AssertionError("unreachable")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server and wait; SIGKILL it if it does not stop within :data:`STOP_S`."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _readable(sock: socket.socket) -> bool:
    """Whether ``sock`` has bytes (or an end) to read now.

    poll(2), as select(2) cannot take a descriptor past 1,023, and a long test run holds more.
    """
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def answer_before_the_end(
    url: str, head: bytes, parts: Iterable[bytes], *, wait: float = 30.0
) -> tuple[int | None, int]:
    """Send a request whose body never ends; the status the server answers, and bytes sent.

    ``head`` is the request line and headers (with ``Transfer-Encoding: chunked``); each of
    ``parts`` is sent as one chunk, stopping early once the server answers or closes. The
    body's last chunk is never sent: a server that reads a body whole before it decides
    never answers, and this returns ``(None, sent)`` after ``wait`` seconds of silence.
    """
    split = urlsplit(url)
    assert split.hostname is not None and split.port is not None
    sent = 0
    with socket.create_connection((split.hostname, split.port), timeout=wait) as sock:
        sock.sendall(head)
        try:
            for part in parts:
                if _readable(sock):
                    break  # it answered (or closed) already
                sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
                sent += len(part)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # it stopped reading, or closed: its answer (if any) is waiting
        received = b""
        deadline = time.monotonic() + wait
        while b"\r\n" not in received and time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            received += chunk
    if not received.startswith(b"HTTP/1.1 "):
        return None, sent
    return int(received.split()[1]), sent


def wait_for(what: str, done: Callable[[], bool], timeout: float = WAIT_S) -> None:
    """Poll ``done`` until it is true; fail saying ``what`` was awaited after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for {what}")
        time.sleep(0.1)


class RedisServer:
    """A ``redis-server`` of this test's own, on a free port, without persistence."""

    def __init__(self, directory: Path, password: str = "") -> None:
        self.directory = directory
        self.port = free_port()
        self.password = password
        auth = f":{password}@" if password else ""
        self.url = f"redis://{auth}127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and wait until it answers PING."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / "redis.log", "ab") as log:
            self.proc = subprocess.Popen(
                [
                    REDIS_SERVER,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(self.directory),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    *(["--requirepass", self.password] if self.password else []),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        client = redis.Redis(port=self.port, password=self.password or None)

        def answers() -> bool:
            assert self.proc is not None and self.proc.poll() is None, "redis-server exited"
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for("redis-server to answer", answers)
        client.close()

    def stop(self) -> None:
        """Stop it (SIGKILL: whatever it held is gone)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT_S)
