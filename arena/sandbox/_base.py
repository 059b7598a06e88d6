"""What every sandbox provides: start a bot, hand over a gRPC endpoint, stop it for sure."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Protocol

from flipflop import BotManifest

__all__ = ["RunningBot", "Sandbox", "SandboxKind", "SandboxLimits", "StderrCapture"]


class SandboxKind(Enum):
    """The kinds of sandbox."""

    DOCKER = "docker"
    """A locked-down container per bot: the league's sandbox."""
    PROCESS = "process"
    """A child process with resource limits: weaker isolation, for your own bots."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resource limits for one bot instance.

    Attributes:
        memory_mb: address space (process) or memory (docker) limit.
        pids: processes and threads.
        open_files: file descriptors.
        file_size_mb: largest file the bot may write.
        tmp_mb: size of the bot's writable /tmp (docker tmpfs).
        cpus: CPU share (docker ``--cpus``); see docs/sandbox.md on fairness.
        cpu_seconds: total CPU time for one bot instance (one match).
        log_bytes: stdout+stderr kept per bot instance; the rest is counted and dropped.
        start_timeout_s: how long a bot may take to answer its first health check.
    """

    memory_mb: int = 512
    pids: int = 64
    open_files: int = 256
    file_size_mb: int = 16
    tmp_mb: int = 16
    cpus: float = 1.0
    cpu_seconds: int = 900
    log_bytes: int = 256 * 1024
    start_timeout_s: float = 20.0


class RunningBot(Protocol):
    """A started bot instance."""

    endpoint: str
    """The gRPC target to dial (``unix:/path``)."""
    log_path: Path
    """Where its stdout/stderr are kept (capped)."""

    def alive(self) -> bool:
        """True while the bot's process or container runs."""
        ...

    def dropped_log_bytes(self) -> int:
        """Output bytes beyond the cap that were discarded."""
        ...

    def stop(self) -> None:
        """Stop and remove it; safe to call twice."""
        ...


class Sandbox(Protocol):
    """Starts bots. The runner does not care which kind."""

    kind: SandboxKind
    isolation: str
    """One line for the output: what this sandbox does and does not protect against."""
    limits: SandboxLimits
    """The limits every bot it starts runs under."""

    def start(self, bot: BotManifest, workdir: Path, label: str) -> RunningBot:
        """Start one instance of ``bot`` with its socket and scratch space under ``workdir``."""
        ...

    def close(self) -> None:
        """Release everything this sandbox started (idempotent)."""
        ...


class StderrCapture:
    """Copies a bot's output to a file up to a byte cap, counting (and discarding) the rest.

    So a bot that floods its output can neither fill the disk nor block on a full pipe. The
    source is a pipe (the process sandbox) or any iterable of byte chunks (a container's
    attached output stream).
    """

    def __init__(self, source: IO[bytes] | Iterable[bytes], path: Path, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.dropped = 0
        self._notes: list[str] = []
        self._source = source
        read1 = getattr(source, "read1", None)
        chunks: Iterable[bytes] = iter(lambda: read1(65536), b"") if read1 else source
        self._thread = threading.Thread(
            target=self._pump, args=(chunks,), name=f"log:{path.name}", daemon=True
        )
        self._thread.start()

    def _pump(self, chunks: Iterable[bytes]) -> None:
        kept = 0
        with open(self.path, "wb") as out:
            # A container's stream raises when the container goes away: that is its end.
            with contextlib.suppress(Exception):
                for chunk in chunks:
                    room = max(0, self.cap - kept)
                    if room:
                        out.write(chunk[:room])
                        out.flush()
                        kept += min(room, len(chunk))
                    self.dropped += max(0, len(chunk) - room)
            if self.dropped:
                out.write(f"\n[arena: {self.dropped} more bytes of output dropped]\n".encode())
            for note in self._notes:
                out.write(f"\n[arena: {note}]\n".encode())

    def note(self, text: str) -> None:
        """A line the arena adds at the end of the log (say, why it stopped the bot)."""
        self._notes.append(text)

    def finished(self) -> bool:
        """True once the source has ended (the bot's output closed)."""
        return not self._thread.is_alive()

    def join(self, timeout: float = 5.0) -> None:
        """Wait for the source to end; close it if it does not end in time."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            close = getattr(self._source, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()
