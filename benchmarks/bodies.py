"""What a stranger's unwanted body costs a real ``arena league serve`` (issue 24, findings 3, 8).

Run: ``python benchmarks/bodies.py [--mib 300] [--file-mib 100]``.

It makes a new league home in a temporary directory, starts ``arena league serve`` on it
(the process sandbox, ``--no-schedule``: nothing plays) and sends two requests on raw
sockets, each body chunked, as fast as the server takes it:

1. an anonymous ``POST /api/v1/worker/matches/1/result`` whose body is a JSON array of
   ``--mib`` MiB: the server's peak resident memory (``VmHWM``) before and after, and how
   much of the body went out before the answer;
2. a ``POST /login`` whose form holds a forged CSRF token and a file part of
   ``--file-mib`` MiB: how much went out before the answer.

A server that decides before reading the body answers at once, and what went out is what
the two sockets' buffers took before it closed. Run it from the repository root; the
measured code is the ``arena`` that Python imports (``PYTHONPATH`` may point at another
checkout, to measure an older version). Prints, for scripts::

    bodies worker route: sent N MiB of M in S s; answer HTTP/1.1 401 …; peak RSS A -> B MiB
    bodies login file: sent N MiB of M in S s; answer HTTP/1.1 413 …

Figures go in the docs, never in timed tests.
"""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.append(str(Path(__file__).resolve().parents[1]))  # for tests.served

from arena.league import init_league
from tests.served import arena_command, free_port

MIB = 1024 * 1024
BOUNDARY = "benchboundary"


def _peak_rss_mib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no VmHWM in /proc")


def _send(port: int, head: bytes, parts: Iterator[bytes], end: bytes) -> tuple[int, str, float]:
    """Send ``head``, then each part as a chunk, then ``end``; MiB sent, the answer, seconds."""
    sent = 0
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
        sock.sendall(head)
        try:
            for part in parts:
                sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
                sent += len(part)
            sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(end), end))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: its answer waits in our buffer
        try:
            answer = sock.recv(4096).split(b"\r\n")[0].decode("latin-1")
        except OSError as e:
            answer = f"no answer ({e})"
    return sent // MIB, answer, time.monotonic() - started


def _json_array(mib: int) -> Iterator[bytes]:
    zeros = b"0," * (MIB // 2 - 1) + b"0"
    yield b"[" + zeros
    for _ in range(mib - 1):
        yield b"," + zeros


def main() -> None:
    """Start the server, send both bodies, print what they cost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=300, help="the JSON body's size")
    parser.add_argument("--file-mib", type=int, default=100, help="the login form's file")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bodies-")) / "home"
    init_league(home, name="bodies")[0].close()
    port = free_port()
    command = arena_command(
        "league", "serve", str(home), "--sandbox", "process-unsafe", "--port", str(port),
        "--no-schedule",
    )  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=10).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)
        before = _peak_rss_mib(server.pid)
        head = (
            b"POST /api/v1/worker/matches/1/result HTTP/1.1\r\nHost: bench\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        sent, answer, seconds = _send(port, head, _json_array(args.mib), b"]")
        after = _peak_rss_mib(server.pid)
        print(
            f"bodies worker route: sent {sent} MiB of {args.mib} in {seconds:.1f} s;"
            f" answer {answer}; peak RSS {before} -> {after} MiB"
        )
        page = httpx.get(f"{url}/login", timeout=30)
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None, "the login page has no CSRF token"
        cookies = "; ".join(f"{k}={v}" for k, v in page.cookies.items())
        head = (
            f"POST /login HTTP/1.1\r\nHost: bench\r\nCookie: {cookies}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        ).encode()
        fields = (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\nforged\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="token"; filename="t"\r\n\r\n'
        ).encode()
        parts = iter([fields, *([b"\0" * MIB] * args.file_mib)])
        sent, answer, seconds = _send(port, head, parts, f"\r\n--{BOUNDARY}--\r\n".encode())
        print(
            f"bodies login file: sent {sent} MiB of {args.file_mib} in {seconds:.1f} s;"
            f" answer {answer}"
        )
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
