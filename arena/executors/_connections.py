"""Connections to the league's HTTP server: how many, from whom, and how long they may wait.

uvicorn bounds a connection that is idle between two requests (``timeout_keep_alive``), but
not one that never finishes its request's head: a client may open a connection and send its
request line and headers a byte at a time, for ever, and a thousand such clients hold a
thousand descriptors. :func:`server_config` gives uvicorn an HTTP/1.1 protocol of our own
(uvicorn's h11 one, bounded) that adds three rules:

- **The head's deadline.** A request's line and headers must all arrive within
  :attr:`ConnectionLimits.header_timeout` seconds of the connection opening or of the
  previous answer being sent; past it the connection is closed, whether bytes are still
  trickling in or not.
- **A cap per client** (:attr:`ConnectionLimits.per_client`, by IPv4 address or IPv6 /64):
  one more connection from a client that holds its share closes that client's connection
  that has waited longest for a request, or is refused (closed at once) when all of them
  are busy with one.
- **A cap on all connections** (:attr:`ConnectionLimits.max_connections`, and never more
  than half of the process's descriptor limit, ``RLIMIT_NOFILE``, so that the matches the
  server plays keep theirs): past it the same rule makes room.

Making room by closing the connection that has waited longest for a request, rather than
refusing the newcomer, is what keeps the server answering others while a crowd of slow
clients holds every slot: an honest client sends its head within milliseconds of
connecting, so it is never the one waiting longest, while a slow one is closed to let it in.
Connections that have not yet sent a first request go first; one idle after an answer (an
honest client keeping its connection for the next request) only when none is left. A
connection busy with a request (its head received) is never closed to make room.

The server also listens with a short accept queue (:data:`ACCEPT_BACKLOG`): asyncio accepts
that many connections at once before their protocols run, so it bounds how far past its cap
the descriptors can go while a crowd reconnects as fast as it is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import logging
import resource
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "HEADER_TIMEOUT_S",
    "KEEP_ALIVE_S",
    "MAX_CONNECTIONS",
    "MAX_CONNECTIONS_PER_CLIENT",
    "ConnectionLimits",
    "client_key",
    "descriptor_budget",
    "server_config",
]

logger = logging.getLogger("arena.league.connections")

MAX_CONNECTIONS = 1000
"""The most connections the server holds open at once (``--max-connections``)."""
MAX_CONNECTIONS_PER_CLIENT = 100
"""The most one client (IPv4 address, IPv6 /64) holds (``--max-connections-per-client``).

A browser opens about six per site and the live page keeps one; a class behind one NAT
address, each with the live page open, stays well within it."""
HEADER_TIMEOUT_S = 10.0
"""Seconds a request's line and headers may take to arrive (``--header-timeout``)."""
KEEP_ALIVE_S = 5
"""Seconds an idle connection is kept between two requests (``--keep-alive``)."""
ACCEPT_BACKLOG = 64
"""Connections the kernel queues for the server to accept, and the most it accepts at once.

asyncio accepts up to this many in one go before it runs any of their protocols, so this is
also how far past its cap the server's descriptors may go for a moment: with uvicorn's
default of 2,048, a burst of connections took every descriptor before one could be closed."""
LOG_EVERY_S = 10.0
"""Closed and refused connections are logged as one summary at most this often."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one client and all clients together may hold of the HTTP server.

    Attributes:
        max_connections: open connections at most, all clients together (never more than
            :func:`descriptor_budget`).
        per_client: open connections at most from one client (IPv4 address or IPv6 /64);
            0 for no cap per client (behind a reverse proxy that does not pass on the
            client's address, every connection comes from the proxy).
        header_timeout: seconds a request's line and headers may take, counted from the
            connection's start or the previous answer's end.
        keep_alive: seconds an idle connection is kept open between two requests.
    """

    max_connections: int = MAX_CONNECTIONS
    per_client: int = MAX_CONNECTIONS_PER_CLIENT
    header_timeout: float = HEADER_TIMEOUT_S
    keep_alive: int = KEEP_ALIVE_S

    def effective_max(self) -> int:
        """:attr:`max_connections`, lowered to what the process's descriptors allow."""
        return min(self.max_connections, descriptor_budget())


def descriptor_budget() -> int:
    """The connections this process can afford: half its soft ``RLIMIT_NOFILE`` (at least 8).

    The other half is for everything else the server opens: its database, the artifact
    store, and the sockets, pipes and files of the matches it plays.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 20
    return max(8, soft // 2)


def client_key(host: str | None) -> str:
    """Whom an address belongs to, for per-client limits: an IPv4 address, an IPv6 /64.

    One IPv6 host usually holds a whole /64, so counting its addresses one by one would give
    it billions of shares. A host that is not an IP address (a unix socket) is kept as it is.
    """
    if not host:
        return "?"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def server_config(
    app: Any,
    *,
    host: str,
    port: int,
    limits: ConnectionLimits | None = None,
    **options: Any,
) -> uvicorn.Config:
    """A uvicorn configuration that serves ``app`` with the bounded protocol and ``limits``.

    Args:
        app: the ASGI application.
        host: the address to listen on.
        port: the port.
        limits: the connection limits; default ``ConnectionLimits()``.
        **options: more of ``uvicorn.Config``'s options (logging, lifespan, shutdown).
    """
    limits = limits or ConnectionLimits()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=bounded_protocol(limits),
        # No WebSocket route exists; an Upgrade request is then answered as plain HTTP.
        ws="none",
        timeout_keep_alive=limits.keep_alive,
        backlog=ACCEPT_BACKLOG,
        **options,
    )


class _Registry:
    """The connections of one server: who holds how many, and who waits for a request."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.maximum = limits.effective_max()
        self.open: set[_Bounded] = set()
        self.per_client: Counter[str] = Counter()
        # Oldest first, the connections waiting for a request's head: those yet to send a
        # first one, and those idle after an answer (a client that was served, as an honest
        # one reusing its connection is: closed only when no first-timer is left to close).
        self.fresh: OrderedDict[_Bounded, None] = OrderedDict()
        self.idle: OrderedDict[_Bounded, None] = OrderedDict()
        self.closed: Counter[str] = Counter()
        self.flush: asyncio.TimerHandle | None = None

    def admit(self, connection: _Bounded) -> bool:
        """Whether ``connection`` may stay, once room is made for it; counts it if so."""
        client = connection.client_key
        per_client = self.limits.per_client
        full = bool(per_client) and self.per_client[client] >= per_client
        if full and not self._make_room(connection, client):
            self.note(connection, "refused: past the per-client cap")
            return False
        if len(self.open) >= self.maximum and not self._make_room(connection, None):
            self.note(connection, "refused: past the server's cap")
            return False
        self.open.add(connection)
        self.per_client[client] += 1
        return True

    def release(self, connection: _Bounded) -> None:
        """Forget ``connection`` (it closed)."""
        if connection in self.open:
            self.open.discard(connection)
            self.per_client[connection.client_key] -= 1
            if self.per_client[connection.client_key] <= 0:
                del self.per_client[connection.client_key]
        self.fresh.pop(connection, None)
        self.idle.pop(connection, None)

    def _make_room(self, newcomer: _Bounded, client: str | None) -> bool:
        """Close the connection (of ``client``, or anyone's) that has waited longest."""
        waiting = itertools.chain(self.fresh, self.idle)
        victim = next((c for c in waiting if client is None or c.client_key == client), None)
        if victim is None:
            return False
        self.release(victim)
        victim.close(self, "closed to make room: waited longest for a request")
        return True

    def note(self, connection: _Bounded, why: str) -> None:
        """Count a closed or refused connection, for the next summary in the log."""
        self.closed[why] += 1
        if self.flush is None:
            self.flush = connection.loop.call_later(LOG_EVERY_S, self._log)

    def _log(self) -> None:
        counts, self.closed, self.flush = self.closed, Counter(), None
        logger.warning(
            "connections closed or refused in the last %.0f s: %s (open now: %d of %d)",
            LOG_EVERY_S,
            ", ".join(f"{n} {why}" for why, n in sorted(counts.items())),
            len(self.open),
            self.maximum,
            extra={"connections": dict(counts)},
        )


class _Bounded(H11Protocol):
    """uvicorn's h11 protocol with a deadline for request heads and caps on connections."""

    registry: _Registry

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Admit the connection (or refuse it) and start the clock on its first request."""
        super().connection_made(transport)
        self.client_key = client_key(self.client[0] if self.client else None)
        self._head_timer: asyncio.TimerHandle | None = None
        self._waiting_since_cycle: object = None
        self._admitted = self.registry.admit(self)
        if not self._admitted:
            transport.close()
            return
        self._wait_for_head()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection."""
        self._stop_waiting()
        self.registry.release(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        """Parse what came; a new request's head ends the wait for it."""
        super().handle_events()
        if self._head_timer is not None and self.cycle is not self._waiting_since_cycle:
            # uvicorn makes a new cycle for each request whose head it has parsed.
            self._stop_waiting()

    def on_response_complete(self) -> None:
        """An answer went out: the next request's head is due within the deadline."""
        if not self.transport.is_closing():
            # Before uvicorn's own handling: it parses a pipelined request at once, which
            # ends this wait again.
            self._wait_for_head()
        super().on_response_complete()

    def close(self, registry: _Registry, why: str) -> None:
        """Close the connection now, counting it under ``why`` in the log's summary."""
        self._stop_waiting()
        if self.transport.is_closing():
            return
        registry.note(self, why)
        # Mid-request h11 refuses to say so: closing the transport is then all there is to do.
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()

    def _wait_for_head(self) -> None:
        self._stop_waiting()
        self._waiting_since_cycle = self.cycle
        self._head_timer = self.loop.call_later(self.registry.limits.header_timeout, self._late)
        (self.registry.fresh if self.cycle is None else self.registry.idle)[self] = None

    def _stop_waiting(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.registry.fresh.pop(self, None)
        self.registry.idle.pop(self, None)

    def _late(self) -> None:
        self._head_timer = None
        self.close(self.registry, "closed: no request head within the deadline")


def bounded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """The protocol class of one server: each server keeps its own count of connections."""

    class BoundedH11Protocol(_Bounded):
        registry = _Registry(limits)

    return BoundedH11Protocol
