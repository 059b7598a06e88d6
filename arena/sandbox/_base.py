"""What every sandbox provides: start a bot, hand over a gRPC endpoint, stop it for sure."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Protocol

from arena._errors import SandboxError
from flipflop import BotManifest

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

__all__ = [
    "RunningBot",
    "Sandbox",
    "SandboxKind",
    "SandboxLimits",
    "StderrCapture",
    "log_tail",
    "open_socket",
    "process_cpu_seconds",
    "process_gone",
    "process_start",
    "stop_all",
]


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
        memory_mb: memory limit (resident memory, swap included: a memory cgroup in the
            process sandbox, the container's in docker; address space only where the process
            sandbox has no memory cgroup); a bot's ``memory_mb`` in bot.toml replaces it.
        max_memory_mb: the most a bot may ask for in its bot.toml (``memory_for``).
        pids: processes and threads.
        open_files: file descriptors.
        file_size_mb: largest file the bot may write.
        tmp_mb: size of the bot's writable /tmp (docker tmpfs).
        cpus: CPU share (docker ``--cpus``); see docs/sandbox.md on fairness.
        cpu_seconds: CPU time for one bot instance's main process (a ladder replaces an
            instance between matches once it has used half of it).
        log_bytes: stdout+stderr kept per bot instance; the rest is counted and dropped.
        start_timeout_s: how long a bot may take, from the moment its process or container
            actually runs, until it serves its health check (a generous budget: a loaded
            machine slows every start); a bot's ``start_timeout_s`` in bot.toml replaces it.
        max_start_timeout_s: the longest start budget a bot may ask for in its bot.toml
            (``start_timeout_for``).
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
    max_memory_mb: int = 1024
    max_start_timeout_s: float = 60.0

    def memory_for(self, bot: BotManifest) -> int:
        """The memory limit of ``bot`` in MB: what its bot.toml asks for, else ``memory_mb``.

        Raises:
            SandboxError: it asks for more than ``max_memory_mb``.
        """
        if bot.memory_mb is None:
            return self.memory_mb
        if bot.memory_mb > self.max_memory_mb:
            raise SandboxError(
                f"{bot.name}: bot.toml asks for memory_mb = {bot.memory_mb}, more than this "
                f"arena allows ({self.max_memory_mb} MB); ask for at most that"
            )
        return bot.memory_mb

    def start_timeout_for(self, bot: BotManifest) -> float:
        """The start budget of ``bot`` in seconds: its bot.toml's, else ``start_timeout_s``.

        Raises:
            SandboxError: it asks for more than ``max_start_timeout_s``.
        """
        if bot.start_timeout_s is None:
            return self.start_timeout_s
        if bot.start_timeout_s > self.max_start_timeout_s:
            raise SandboxError(
                f"{bot.name}: bot.toml asks for start_timeout_s = {bot.start_timeout_s:g}, "
                f"more than this arena allows ({self.max_start_timeout_s:g} s); ask for at "
                "most that"
            )
        return bot.start_timeout_s


class RunningBot(Protocol):
    """A started bot instance."""

    endpoint: str
    """Where the bot listens (``unix:/path``), for messages: dial :meth:`target` instead."""
    log_path: Path
    """Where its stdout/stderr are kept (capped)."""
    seat_token: str
    """The secret it was started with (``FLIPFLOP_SEAT_TOKEN``) and must present in its
    handshake: proof that the process answering is the one started for this seat."""
    started_at: float
    """``time.monotonic()`` when its process or container actually began to run: the start
    budget counts from here, not from when the arena asked for it (an image build or a busy
    Docker engine is not the bot's fault)."""

    def alive(self) -> bool:
        """True while the bot's process or container runs."""
        ...

    def target(self) -> str | None:
        """A gRPC target for the bot's checked socket; None while the socket does not exist.

        The socket is opened without following links and checked (a socket, made by the bot's
        user, in a directory no other bot can write) before the arena dials it, and the target
        names that very inode (``unix:/proc/self/fd/N``), so swapping the path afterwards
        changes nothing.

        Raises:
            SandboxError: something is at the socket's path that fails the checks.
        """
        ...

    def exit_status(self) -> str | None:
        """How the bot ended (``exit code 1``, ``killed by signal 9``…); None while it runs."""
        ...

    def dropped_log_bytes(self) -> int:
        """Output bytes beyond the cap that were discarded."""
        ...

    def cpu_seconds(self) -> float | None:
        """CPU seconds its main process has used (what ``cpu_seconds`` limits); None: unknown."""
        ...

    def cpu_ns(self) -> int | None:
        """CPU nanoseconds its whole cgroup has used so far (every process and thread it ran).

        The runner's clock (docs/arena.md, "Time"): read before and after each call, the
        difference is what the bot is charged, so a busy neighbour cannot make it time out.
        Cheap (one small file read). None when unknown: the runner then charges wall time.
        """
        ...

    def pause(self) -> None:
        """Keep it from running while it waits between matches (kept by a ``BotHost``).

        Docker freezes the container (``docker pause``): a kept bot then uses no CPU (under
        gVisor an idle one used 1.4 % of a core, docs/arena.md). A no-op where the sandbox
        has no such thing. Never raises: a bot that is gone shows it in :meth:`exit_status`.
        """
        ...

    def resume(self) -> bool:
        """Undo :meth:`pause` before its next match; False if it cannot run again (gone)."""
        ...

    def stop(self) -> None:
        """Stop and remove it, paused or not; safe to call twice."""
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


FLOOD_BURST_BYTES = 96 * 1024 * 1024
"""Output a bot instance may write at once before it is stopped as a flooder (a bounded burst,
say a 64 MB dump, is only capped and counted)."""
FLOOD_BYTES_PER_S = 1024 * 1024
"""Output per second of its life a bot instance may write on top of the burst."""


class StderrCapture:
    """Copies a bot's output to a file up to a byte cap, counting (and discarding) the rest.

    So a bot that floods its output can neither fill the disk nor block on a full pipe. The
    source is a pipe (the process sandbox) or any iterable of byte chunks (a container's
    attached output stream).

    Every byte pumped is work for the arena (and under Docker for its daemon and the
    container's shim) that no quota of the bot's pays for, so output is also metered: once an
    instance has written more than ``flood_burst`` bytes plus ``flood_rate`` bytes for every
    second since it started, it is a flooder: :attr:`stopped_why` says so, the log ends with
    that line, and the callback given to :meth:`on_flood` (the sandbox's ``stop``) is called,
    once, on a thread of its own.
    """

    def __init__(
        self,
        source: IO[bytes] | Iterable[bytes],
        path: Path,
        cap: int,
        *,
        flood_burst: int = FLOOD_BURST_BYTES,
        flood_rate: int = FLOOD_BYTES_PER_S,
    ) -> None:
        self.path = path
        self.cap = cap
        self.dropped = 0
        self.stopped_why = ""
        """Why the arena stopped the bot for its output (``stopped: flooded its output, N
        bytes``); "" while it has not."""
        self._flood_burst = flood_burst
        self._flood_rate = flood_rate
        self._on_flood: Callable[[], None] | None = None
        self._flood_lock = threading.Lock()
        self._started = time.monotonic()
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
        total = 0
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
                    total += len(chunk)
                    if total > self._flood_burst and total > self._flood_burst + (
                        self._flood_rate * (time.monotonic() - self._started)
                    ):
                        # Not a byte more: the bot blocks on its full pipe until it is gone.
                        self._flooded(total)
                        break
            if self.dropped:
                out.write(f"\n[arena: {self.dropped} more bytes of output dropped]\n".encode())
            for note in self._notes:
                out.write(f"\n[arena: {note}]\n".encode())

    def note(self, text: str) -> None:
        """A line the arena adds at the end of the log (say, why it stopped the bot)."""
        self._notes.append(text)

    def on_flood(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` once the bot floods its output (at once if it already has)."""
        with self._flood_lock:
            self._on_flood = stop
            flooded = bool(self.stopped_why)
        if flooded:
            threading.Thread(target=stop, name=f"flood:{self.path.name}", daemon=True).start()

    def _flooded(self, total: int) -> None:
        # Stopping joins this very thread (the pump drains the pipe until the bot is gone):
        # the callback runs on another.
        with self._flood_lock:
            self.stopped_why = f"stopped: flooded its output, {total} bytes"
            self._notes.append(self.stopped_why)
            stop = self._on_flood
        if stop is not None:
            threading.Thread(target=stop, name=f"flood:{self.path.name}", daemon=True).start()

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


def open_socket(
    path: Path,
    owners: frozenset[int],
    dir_owners: frozenset[int],
    pending_owners: frozenset[int] = frozenset(),
) -> int | None:
    """Open a bot's unix socket for dialing, after checking it is the bot's own; None if absent.

    Returns an ``O_PATH`` descriptor of the socket inode (dial ``unix:/proc/self/fd/N``: the
    kernel resolves that link to the inode itself, so a symlink or a file swapped in after the
    check is never followed). The caller closes it once it will dial no more.

    Args:
        path: the socket's path.
        owners: user ids that may own the socket (the bot's user).
        dir_owners: user ids that may own its directory (the bot's or the arena's, never a
            neighbour's: another bot could swap what is in a directory it owns).
        pending_owners: user ids that own the socket while it is being made for the bot
            (gVisor's gofer binds it as root, then hands it to the bot's user): such a socket
            counts as not there yet (None), so the caller looks again.

    Raises:
        SandboxError: the path is a link or not a socket, or an owner is not one expected.
    """
    try:
        dir_fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise SandboxError(f"cannot open the socket directory {path.parent}: {e}") from e
    try:
        d = os.fstat(dir_fd)
        if d.st_uid not in dir_owners:
            raise SandboxError(f"{path.parent} is owned by user {d.st_uid}, not the bot's")
        try:
            fd = os.open(path.name, os.O_PATH | os.O_NOFOLLOW, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise SandboxError(f"cannot open {path}: {e}") from e
    finally:
        os.close(dir_fd)
    st = os.fstat(fd)
    problem = ""
    if stat.S_ISLNK(st.st_mode):
        problem = "is a symbolic link (the arena follows none)"
    elif not stat.S_ISSOCK(st.st_mode):
        problem = f"is not a socket ({stat.filemode(st.st_mode)})"
    elif st.st_uid in pending_owners and st.st_uid not in owners:
        os.close(fd)
        return None
    elif st.st_uid not in owners:
        problem = f"is owned by user {st.st_uid}, not the bot's user"
    if problem:
        os.close(fd)
        raise SandboxError(f"{path} {problem}")
    return fd


def log_tail(path: Path, lines: int = 5, limit: int = 600) -> str:
    """The last ``lines`` lines of a bot's log, joined with `` | `` and cut to ``limit``."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [x.strip() for x in text.splitlines() if x.strip()][-lines:]
    out = " | ".join(kept)
    return out if len(out) <= limit else "…" + out[-limit:]


def process_start(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot), to tell a reused pid apart.

    "" when it cannot be read (no such process, no /proc).
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            # The command name may hold spaces and parentheses: split after the last ')'.
            return fh.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return ""


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds process ``pid`` has used (all its threads); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


def process_gone(pid: int, start: str) -> bool:
    """True if the process ``pid`` that started at ``start`` (:func:`process_start`) is gone.

    An unknown start ("" or "0") means only a pid that no process has is gone.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists; owned by someone else
    return start not in ("", "0") and process_start(pid) not in ("", start)


def stop_all(bots: Iterable[RunningBot]) -> None:
    """Stop ``bots`` all at once: each may take its grace period, and Ctrl-C must be quick."""
    threads = [threading.Thread(target=b.stop, name="stop", daemon=True) for b in bots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
