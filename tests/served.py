"""A real ``arena league serve`` in a subprocess: a free port, starting it, its health, stopping it.

Shared by the league's server tests (``tests/league``), the web tests' seeded league
(``tests/web/seed.py``) and ``scripts/screenshots.py``; pytest finds it because the
repository root is on its ``pythonpath`` (``pyproject.toml``).
"""

from __future__ import annotations

import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

import httpx

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
