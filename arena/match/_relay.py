"""A guard between the arena's gRPC client and each bot's socket: cuts off frame floods.

The arena's gRPC answers every HTTP/2 frame a bot sends: a PING is read and acknowledged, a
SETTINGS frame applied and acknowledged, a WINDOW_UPDATE, RST_STREAM or PRIORITY handled. A
bot can send them without end at no cost to its own quota (issue 15, finding 5), and gRPC's
ping-abuse policy (``grpc.http2.max_ping_strikes``) binds servers only, never the arena's
client. So a guarded bot's connections pass through a :class:`Relay`: one thread for every
bot, which copies bytes both ways and reads only the 9-byte HTTP/2 frame headers.

**The budget** (:class:`FrameBudget`), per bot instance, over all its connections: every
frame the bot sends costs one token, whatever its type. Tokens come from the arena's own
requests (``per_request`` for each HEADERS or DATA frame the arena sent, one for each PING or
SETTINGS the bot must acknowledge) and from the clock (``per_second``), and never pile up past
``burst``, which is also what a bot starts with. An honest bot sends a few frames per call
(its headers, its answer, its trailers, a WINDOW_UPDATE, now and then a PING): a fraction of
what it is allowed. A bot whose tokens run out is **cut off**: the relay closes both sides of
its connections and refuses new ones, before the frames that overdrew it reach the arena, and
:meth:`GuardedBot.exit_status` says why (``cut off: sent 3,855 HTTP/2 frames, 3,854 of them
PING, …``), so the call in flight fails and the runner faults the seat with that reason. A
frame longer than the arena's ``SETTINGS_MAX_FRAME_SIZE`` (16,384 bytes unless it said more) is
cut off as well: the arena never reads it.

**Where the arena dials.** Each guarded bot gets a listening socket in a directory the relay
makes with mode 0700, outside every bot's reach (a container sees only its own socket
directory; a process-sandbox bot with its own user cannot enter it). The relay dials the
bot's checked target (``unix:/proc/self/fd/N``, :meth:`arena.sandbox.RunningBot.target`).

**Whose bots.** :func:`relay_for` guards the Docker sandbox's bots (strangers'); the process
sandbox's (one's own) are dialled directly: the extra hop cost a ladder more than a tenth of
its throughput (docs/security.md).
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import selectors
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox import RunningBot, Sandbox, SandboxKind

__all__ = ["FrameBudget", "GuardedBot", "Relay", "relay_for", "shared_relay"]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""What the client (the arena) sends first, before any frame."""
HEADER = 9
"""An HTTP/2 frame header: 24-bit length, type, flags, 31-bit stream id."""
DEFAULT_MAX_FRAME = 16_384
"""``SETTINGS_MAX_FRAME_SIZE`` until the arena's SETTINGS say otherwise (RFC 9113, 6.5.2)."""
_CHUNK = 1 << 16

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = range(8)
WINDOW_UPDATE, CONTINUATION = 8, 9
ACK = 0x1
_MAX_FRAME_SIZE_ID = 0x5
FRAME_NAMES = {
    DATA: "DATA",
    HEADERS: "HEADERS",
    PRIORITY: "PRIORITY",
    RST_STREAM: "RST_STREAM",
    SETTINGS: "SETTINGS",
    PUSH_PROMISE: "PUSH_PROMISE",
    PING: "PING",
    GOAWAY: "GOAWAY",
    WINDOW_UPDATE: "WINDOW_UPDATE",
    CONTINUATION: "CONTINUATION",
}


@dataclass(frozen=True, slots=True)
class FrameBudget:
    """How many HTTP/2 frames a bot instance may send the arena (module docstring).

    Attributes:
        burst: tokens a bot starts with, and the most it can hold.
        per_request: tokens for each HEADERS or DATA frame the arena sends (a request).
        per_second: tokens for each second of wall time.
        max_frame_bytes: the longest frame passed to the arena, if less than the arena's own
            ``SETTINGS_MAX_FRAME_SIZE`` (gRPC says 4 MiB); None (the default): that setting
            alone. A longer frame than the arena allows breaks HTTP/2 and is never read; one
            the arena allows is passed, and an answer over its size cap is then refused by
            gRPC as a ``protocol`` fault, one strike, as without the relay
            (``flipflop._wire.ANSWER_CAPS``): the frame budget, not the frame size, is what
            bounds a flood.
    """

    burst: int = 1000
    per_request: int = 8
    per_second: int = 100
    max_frame_bytes: int | None = None


class _Frames:
    """Reads HTTP/2 frame headers out of one direction's byte stream, across reads.

    ``counts[type]`` counts the frames whose header has been read (a list that may be shared:
    a bot's, over its connections), ``frames`` all of them; ``settings`` collects the payloads
    of non-ACK SETTINGS frames when ``keep_settings`` is set (the arena's, for its maximum
    frame size).
    """

    __slots__ = ("_head", "_keep", "_payload", "_skip", "counts", "frames", "preface", "settings")

    def __init__(
        self, counts: list[int], *, preface: bool = False, keep_settings: bool = False
    ) -> None:
        self.preface = len(PREFACE) if preface else 0
        self.counts = counts
        self.frames = 0
        self.settings: list[bytes] = []
        self._keep = keep_settings
        self._head = bytearray()
        self._skip = 0
        self._payload: bytearray | None = None

    def feed(self, data: memoryview, limit: int) -> int:
        """Read ``data``; return the length of a frame over ``limit`` met in it, else 0."""
        i, n = 0, len(data)
        if self.preface:
            take = min(self.preface, n)
            self.preface -= take
            i = take
        counts, head = self.counts, self._head
        while i < n:
            if self._skip:
                take = min(self._skip, n - i)
                if self._payload is not None:
                    self._payload += data[i : i + take]
                self._skip -= take
                i += take
                if not self._skip and self._payload is not None:
                    self.settings.append(bytes(self._payload))
                    self._payload = None
                continue
            if head or n - i < HEADER:
                take = min(HEADER - len(head), n - i)
                head += data[i : i + take]
                i += take
                if len(head) < HEADER:
                    break
                h: bytes | memoryview = bytes(head)
                head.clear()
            else:
                h = data[i : i + HEADER]
                i += HEADER
            length = (h[0] << 16) | (h[1] << 8) | h[2]
            kind = h[3]
            counts[kind] += 1
            self.frames += 1
            if length > limit:
                return length
            self._skip = length
            if self._keep and kind == SETTINGS and not h[4] & ACK and length:
                self._payload = bytearray()
        return 0


class _Link:
    """One guarded bot instance: its listening socket, its connections, its budget."""

    def __init__(self, relay: Relay, target: str, path: Path, budget: FrameBudget) -> None:
        self.relay = relay
        self.target = target.removeprefix("unix:")
        self.path = path
        self.budget = budget
        self.tokens = float(budget.burst)
        self.refilled = time.monotonic()
        self.requests = 0
        self.sent = [0] * 256
        """Frames the bot sent, by type, over all its connections."""
        self.why: str | None = None
        self.conns: set[_Conn] = set()
        self.listener: socket.socket | None = None

    def charge(self, frames: int, credit: float) -> bool:
        """Take ``frames`` tokens after adding ``credit``; False once the bot is overdrawn."""
        now = time.monotonic()
        tokens = self.tokens + credit + (now - self.refilled) * self.budget.per_second
        self.refilled = now
        self.tokens = min(float(self.budget.burst), tokens) - frames
        return self.tokens >= 0

    def overdrawn(self) -> str:
        """Why the bot was cut off for its frames."""
        total = sum(self.sent)
        top = max(range(256), key=self.sent.__getitem__)
        name = FRAME_NAMES.get(top, f"type {top}")
        return (
            f"cut off: sent {total:,} HTTP/2 frames, {self.sent[top]:,} of them {name}, "
            f"for {self.requests:,} request frames (allowed: {self.budget.per_request} a request "
            f"and {self.budget.per_second} a second, {self.budget.burst:,} at once)"
        )


class _Conn:
    """One connection of the arena to a bot, through the relay: two sockets, two directions."""

    __slots__ = ("arena", "bot", "closed", "down", "events", "link", "max_frame", "pending", "up")

    def __init__(self, link: _Link, arena: socket.socket, bot: socket.socket) -> None:
        self.link = link
        self.arena = arena
        self.bot = bot
        self.down = _Frames([0] * 256, preface=True, keep_settings=True)
        """Arena → bot: requests, the arena's SETTINGS."""
        self.up = _Frames(link.sent)
        """Bot → arena: what is counted."""
        self.max_frame = DEFAULT_MAX_FRAME
        self.pending: dict[socket.socket, bytes] = {}
        """Bytes a destination socket could not take yet, by that socket."""
        self.events: dict[socket.socket, int] = {}
        """What the selector watches on each socket, where it is not the default (read)."""
        self.closed = False


class GuardedBot:
    """A :class:`~arena.sandbox.RunningBot` whose connections go through a :class:`Relay`.

    Everything but :meth:`target`, :meth:`exit_status`, :meth:`alive` and :meth:`stop` is the
    bot's own. Once the relay cut it off, :meth:`exit_status` says why (the bot is as good as
    ended: no call will be answered), and :meth:`stop` stops it.
    """

    def __init__(self, bot: RunningBot, relay: Relay) -> None:
        self.inner = bot
        self.endpoint = bot.endpoint
        self.log_path = bot.log_path
        self.seat_token = bot.seat_token
        self.started_at = bot.started_at
        self._relay = relay
        self._link: _Link | None = None

    def why_cut(self) -> str | None:
        """Why the relay cut this bot off; None while it has not."""
        return None if self._link is None else self._link.why

    def alive(self) -> bool:
        return self.why_cut() is None and self.inner.alive()

    def target(self) -> str | None:
        if self._link is None:
            target = self.inner.target()
            if target is None:
                return None
            self._link = self._relay.link(target)
        return f"unix:{self._link.path}"

    def exit_status(self) -> str | None:
        status = self.inner.exit_status()
        why = self.why_cut()
        if why is None:
            return status
        return why if status is None or why in status else f"{why}; {status}"

    def dropped_log_bytes(self) -> int:
        return self.inner.dropped_log_bytes()

    def cpu_seconds(self) -> float | None:
        return self.inner.cpu_seconds()

    def cpu_ns(self) -> int | None:
        return self.inner.cpu_ns()

    def pause(self) -> None:
        self.inner.pause()

    def resume(self) -> bool:
        return self.why_cut() is None and self.inner.resume()

    def stop(self) -> None:
        if self._link is not None:
            self._relay.unlink(self._link)
        self.inner.stop()


class Relay:
    """One thread relaying the connections of every bot it guards (module docstring).

    Args:
        budget: the frame budget of each bot instance.
    """

    def __init__(self, budget: FrameBudget | None = None) -> None:
        self.budget = budget or FrameBudget()
        self.dir = Path(tempfile.mkdtemp(prefix="ffa-relay-"))  # mode 0700: the arena's alone
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._todo: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()
        self._buf = bytearray(_CHUNK)
        self._view = memoryview(self._buf)
        self._count = 0
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="arena-relay", daemon=True)
        self._thread.start()

    def guard(self, bot: RunningBot) -> GuardedBot:
        """``bot``, its connections to go through this relay."""
        return GuardedBot(bot, self)

    def link(self, target: str) -> _Link:
        """A listening socket for the arena to dial, relayed to ``target``."""
        with self._lock:
            self._count += 1
            path = self.dir / f"{self._count}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(16)
        listener.setblocking(False)
        link = _Link(self, target, path, self.budget)
        link.listener = listener
        self._call(lambda: self._sel.register(listener, selectors.EVENT_READ, link))
        return link

    def unlink(self, link: _Link) -> None:
        """Close a link's listener and connections (the bot is being stopped)."""
        self._call(lambda: self._drop(link))

    def close(self) -> None:
        """Stop the thread; close every connection; remove the directory (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._call(lambda: None)
        self._thread.join(5.0)
        shutil.rmtree(self.dir, ignore_errors=True)

    # -------------------------------------------------------------- the relay thread

    def _call(self, job: Callable[[], object]) -> None:
        self._todo.put(job)
        with contextlib.suppress(BlockingIOError):
            self._wake_w.send(b"\0")

    def _run(self) -> None:
        sel = self._sel
        while not self._closed:
            for key, events in sel.select():
                data = key.data
                if data is None:
                    self._jobs()
                elif isinstance(data, _Link):
                    self._accept(data)
                else:
                    sock: socket.socket = key.fileobj  # type: ignore[assignment]
                    if events & selectors.EVENT_WRITE:
                        self._flush(data, sock)
                    if events & selectors.EVENT_READ and not data.closed:
                        self._pump(data, sock)
        for key in list(sel.get_map().values()):
            if isinstance(key.data, _Link):
                self._drop(key.data)
        sel.close()
        self._wake_r.close()
        self._wake_w.close()

    def _jobs(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(4096):
                pass
        while True:
            try:
                job = self._todo.get_nowait()
            except queue.Empty:
                return
            job()

    def _drop(self, link: _Link) -> None:
        """Close a link: its listener, its socket file, its connections."""
        if link.listener is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(link.listener)
            link.listener.close()
            link.listener = None
        with contextlib.suppress(OSError):
            link.path.unlink()
        for conn in list(link.conns):
            self._close(conn)

    def _accept(self, link: _Link) -> None:
        assert link.listener is not None
        try:
            arena, _ = link.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        if link.why is not None:
            arena.close()
            return
        bot = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        bot.setblocking(False)
        arena.setblocking(False)
        try:
            bot.connect(link.target)
        except OSError:
            # Not listening yet, gone, or its backlog full: the arena's gRPC dials again.
            bot.close()
            arena.close()
            return
        conn = _Conn(link, arena, bot)
        link.conns.add(conn)
        self._sel.register(arena, selectors.EVENT_READ, conn)
        self._sel.register(bot, selectors.EVENT_READ, conn)

    def _pump(self, conn: _Conn, src: socket.socket) -> None:
        """Copy what ``src`` has to the other side, counting frames on the way."""
        try:
            n = src.recv_into(self._buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            n = 0
        if not n:
            self._close(conn)
            return
        data = self._view[:n]
        if src is conn.bot:
            if not self._count_up(conn, data):
                self._drop(conn.link)
                return
            dst = conn.arena
        else:
            self._count_down(conn, data)
            dst = conn.bot
        try:
            sent = dst.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._close(conn)
            return
        if sent < n:
            # Hold the source until the destination drains: memory stays bounded.
            conn.pending[dst] = bytes(data[sent:])
            self._watch(conn)

    def _count_up(self, conn: _Conn, data: memoryview) -> bool:
        """Count the bot's frames in ``data`` against its budget; False: cut it off."""
        link, up = conn.link, conn.up
        before = up.frames
        cap = link.budget.max_frame_bytes
        limit = conn.max_frame if cap is None else min(conn.max_frame, cap)
        too_long = up.feed(data, limit)
        if too_long:
            link.why = (
                f"cut off: sent an HTTP/2 frame of {too_long:,} bytes (the arena reads at most "
                f"{limit:,})"
            )
            return False
        if not link.charge(up.frames - before, 0.0):
            link.why = link.overdrawn()
            return False
        return True

    def _count_down(self, conn: _Conn, data: memoryview) -> None:
        """Credit the bot for the arena's requests in ``data``; note the arena's settings."""
        down, link = conn.down, conn.link
        down.feed(data, 1 << 24)
        c = down.counts
        requests = c[HEADERS] + c[DATA]
        acks = c[PING] + c[SETTINGS]
        if requests or acks:
            link.requests += requests
            link.charge(0, requests * link.budget.per_request + acks)
            c[HEADERS] = c[DATA] = c[PING] = c[SETTINGS] = 0
        while down.settings:
            conn.max_frame = _max_frame(down.settings.pop(0), conn.max_frame)

    def _flush(self, conn: _Conn, dst: socket.socket) -> None:
        data = conn.pending.get(dst)
        if data is None:
            return
        try:
            sent = dst.send(data)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        if sent < len(data):
            conn.pending[dst] = data[sent:]
            return
        del conn.pending[dst]
        self._watch(conn)

    def _watch(self, conn: _Conn) -> None:
        """Each socket: read while the other side has nothing pending; write while it has."""
        for sock, other in ((conn.arena, conn.bot), (conn.bot, conn.arena)):
            events = (0 if other in conn.pending else selectors.EVENT_READ) | (
                selectors.EVENT_WRITE if sock in conn.pending else 0
            )
            now = conn.events.get(sock, selectors.EVENT_READ)
            if events == now:
                continue
            conn.events[sock] = events
            if not events:
                self._sel.unregister(sock)
            elif not now:
                self._sel.register(sock, events, conn)
            else:
                self._sel.modify(sock, events, conn)

    def _close(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        conn.link.conns.discard(conn)
        for s in (conn.arena, conn.bot):
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(s)
            s.close()


def _max_frame(payload: bytes, current: int) -> int:
    """``SETTINGS_MAX_FRAME_SIZE`` from a SETTINGS payload (6-byte entries), else ``current``."""
    for i in range(0, len(payload) - 5, 6):
        if int.from_bytes(payload[i : i + 2], "big") == _MAX_FRAME_SIZE_ID:
            current = int.from_bytes(payload[i + 2 : i + 6], "big")
    return current


_shared: Relay | None = None
_shared_lock = threading.Lock()


def shared_relay() -> Relay:
    """This process's relay (one thread for every guarded bot), started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Relay()
            atexit.register(_shared.close)  # removes its socket directory
        return _shared


def relay_for(sandbox: Sandbox) -> Relay | None:
    """The relay that guards the bots ``sandbox`` starts: the shared one where strangers play.

    The Docker sandbox's bots go through it; the process sandbox's (one's own bots) are dialled
    directly, since the relay's extra hop costs a ladder more than a tenth of its throughput
    (docs/security.md, "Floods and slow play").
    """
    return shared_relay() if sandbox.kind is SandboxKind.DOCKER else None
