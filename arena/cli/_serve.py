"""``arena league serve``: the league's pages, API, scheduler and match execution in one process.

The site (``arena.web.create_site``: the web pages and the API) runs under uvicorn; the
:class:`~arena.league.LeagueService` (scheduler, requeue, executor) starts once the
application has started and stops before it ends, in the application's lifespan. SIGTERM or
Ctrl-C stops the server gracefully: no new connection, no new match; running matches get
``--grace`` seconds to finish and be recorded, and those still running then go back to the
queue. Whatever is killed harder (SIGKILL, a power cut) loses nothing either: the leases of
its matches run out and another server, or this one restarted, plays them again.

Logs are JSON lines on standard error (``docs/league.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import logging
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import click

from arena._errors import LeagueError, SandboxUnavailable
from arena.cli._errors import ArenaCliError
from arena.cli._options import (
    checked_broker,
    executor_options,
    league_sandbox_option,
    log_level_option,
    runtime_option,
    time_options,
)
from arena.executors._connections import (
    ACCEPT_BACKLOG,
    HEADER_TIMEOUT_S,
    KEEP_ALIVE_S,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_CLIENT,
    ConnectionLimits,
    server_config,
)
from arena.league._dispatch import DEFAULT_REPUBLISH, FleetRules
from arena.league._executor import DEFAULT_LEASE
from arena.league._home import League, open_league
from arena.league._metrics import metrics_text, setup_logging
from arena.league._service import LeagueService
from arena.match._runner import TimeControl
from arena.sandbox import Sandbox, SandboxLimits, choose_sandbox
from flipflop import MatchConfig

__all__ = ["PROCESS_SANDBOX_WARNING", "open_sandbox", "serve"]

logger = logging.getLogger("arena.league.serve")

PROCESS_SANDBOX_WARNING = (
    "WARNING: --sandbox process-unsafe runs every bot as a plain child process of this "
    "server. It is NOT a security boundary: a submitted bot can read the league's files, its "
    "database and its secret key. Use it only for bots you wrote or trust, never for "
    "strangers' submissions."
)
_MATCH_DEFAULTS = MatchConfig()
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@click.command()
@click.argument(
    "directory",
    required=False,
    envvar="ARENA_LEAGUE",
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="The port to listen on.",
)
@click.option(
    "--slots",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Matches (or validations) played at once on this machine (with --executor celery "
    "the workers play them: --slots then only sets the default --target-queued).",
)
@league_sandbox_option
@runtime_option
@click.option(
    "--lease",
    type=click.FloatRange(min=1.0),
    default=DEFAULT_LEASE.total_seconds(),
    show_default=True,
    metavar="SECONDS",
    help="How long a match is held between renewals: a match whose server died is played "
    "again this long after its last renewal.",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0.0),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="On SIGTERM or Ctrl-C, how long running matches may take to finish before they "
    "go back to the queue.",
)
@click.option(
    "--hand-cap",
    type=click.IntRange(min=1),
    default=_MATCH_DEFAULTS.hand_cap,
    show_default=True,
    help="The most hands a match lasts.",
)
@time_options
@click.option(
    "--target-queued",
    type=click.IntRange(min=1),
    default=None,
    help="The queue length the scheduler keeps; with --executor celery, give it about twice "
    "the fleet's total --concurrency, so no worker waits.  [default: twice --slots]",
)
@click.option(
    "--max-per-version",
    type=click.IntRange(min=3),
    default=10,
    show_default=True,
    help="The most queued and running matches one bot version may be in.",
)
@click.option(
    "--schedule/--no-schedule",
    default=True,
    show_default=True,
    help="Schedule new matches; --no-schedule only plays what is queued (drains the queue).",
)
@executor_options("this server's --slots")
@click.option(
    "--republish",
    type=click.FloatRange(min=0.5),
    default=DEFAULT_REPUBLISH,
    show_default=True,
    metavar="SECONDS",
    help="With --executor celery: publish a match that is still queued again after this "
    "long (its message may have been lost with the broker).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=MAX_CONNECTIONS,
    show_default=True,
    help="The most HTTP connections held open at once (and never more than half the "
    "process's descriptor limit, RLIMIT_NOFILE).",
)
@click.option(
    "--max-connections-per-client",
    type=click.IntRange(min=0),
    default=MAX_CONNECTIONS_PER_CLIENT,
    show_default=True,
    help="The most HTTP connections one client (an IPv4 address, an IPv6 /64) holds; 0 for "
    "no cap per client (behind a proxy that does not pass on clients' addresses).",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0.1),
    default=HEADER_TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="How long a request's line and headers may take to arrive before the connection "
    "is closed.",
)
@click.option(
    "--keep-alive",
    type=click.IntRange(min=1),
    default=KEEP_ALIVE_S,
    show_default=True,
    metavar="SECONDS",
    help="How long an idle HTTP connection is kept open between two requests.",
)
@log_level_option
def serve(
    directory: Path | None,
    host: str,
    port: int,
    slots: int,
    sandbox: str,
    runtime: str,
    lease: float,
    grace: float,
    hand_cap: int,
    decision_ms: int,
    time_bank_ms: int,
    target_queued: int | None,
    max_per_version: int,
    schedule: bool,
    executor: str,
    broker: str | None,
    insecure_broker: bool,
    republish: float,
    max_connections: int,
    max_connections_per_client: int,
    header_timeout: float,
    keep_alive: int,
    log_level: str,
) -> None:
    """Serve the league in DIRECTORY: its web pages, API, scheduler and matches, at http://HOST:PORT.

    DIRECTORY defaults to $ARENA_LEAGUE, else the current directory. Bots run in the Docker
    sandbox; --sandbox process-unsafe runs them as plain processes, for a league of bots you
    trust (a class's examples, your own tests), never for strangers' submissions.

    Stop it with SIGTERM or Ctrl-C: running matches finish within --grace seconds or go
    back to the queue. Metrics for Prometheus are at /metrics, health at /api/v1/health.

    \b
    Examples:
        arena league serve ./myleague
        arena league serve ./myleague --host 0.0.0.0 --port 8080 --slots 8
        arena league serve ./myleague --executor celery --broker redis://:PASSWORD@redis:6379/0
    """
    # Imported here: the web stack is needed by this command alone.
    import uvicorn

    from arena.web import create_site

    if executor == "celery" and not broker:
        raise click.UsageError("--executor celery needs --broker redis://HOST:PORT/N")
    if executor == "local" and broker:
        raise click.UsageError("--broker is for --executor celery")
    if broker:
        checked_broker(broker, insecure_broker)
    setup_logging(log_level.upper())
    if sandbox == "process-unsafe":
        click.secho(PROCESS_SANDBOX_WARNING, fg="red", bold=True, err=True)
        logger.warning(PROCESS_SANDBOX_WARNING)
    rules = FleetRules(
        MatchConfig(hand_cap=hand_cap),
        TimeControl(decision_ms=decision_ms, time_bank_ms=time_bank_ms),
        dt.timedelta(seconds=lease),
    )
    fleet_kind = "process" if sandbox == "process-unsafe" else "docker"
    with (
        _league(directory or Path(".")) as opened,
        _server_sandbox(executor, sandbox, runtime) as box,
    ):
        service = LeagueService(
            opened,
            sandbox=box,
            slots=slots,
            lease=rules.lease,
            config=rules.config,
            clock=rules.clock,
            target_queued=target_queued,
            max_per_version=max_per_version,
            scheduling=schedule,
            broker=broker,
            fleet_sandbox=fleet_kind,
            republish_after=republish,
        )
        app = create_site(
            opened,
            executor_status=service.status,
            metrics=lambda: metrics_text(opened, service.status),
            progress=service.live_replays,
            fleet=rules,
        )
        run_with(app, service, grace)
        # What is loaded by now lives as long as the server: moved out of the collector's
        # sight, a full collection takes ms instead of ~70 ms (benchmarks/web.py's p95s).
        gc.collect()
        gc.freeze()
        # Bound before anything starts: a port in use ends here, before a match is played,
        # and --port 0 is told its real port.
        listener = _listen(host, port)
        port = listener.getsockname()[1]
        limits = ConnectionLimits(
            max_connections=max_connections,
            per_client=max_connections_per_client,
            header_timeout=header_timeout,
            keep_alive=keep_alive,
        )
        server = uvicorn.Server(
            server_config(
                app,
                host=host,
                port=port,
                limits=limits,
                log_config=None,
                timeout_graceful_shutdown=10,
            )
        )
        logger.info(
            "serving the league %r from %s on http://%s:%d (sandbox: %s)",
            opened.config.name,
            opened.home,
            host,
            port,
            box.isolation if box is not None else f"{fleet_kind}, on the fleet's workers",
        )
        logger.info(
            "HTTP connections: at most %d (%s per client), request heads within %g s, idle"
            " ones kept %d s",
            limits.effective_max(),
            limits.per_client or "no cap",
            limits.header_timeout,
            limits.keep_alive,
        )
        with _quiet_signals():
            try:
                server.run(sockets=[listener])
            except SystemExit as e:  # uvicorn's way of saying it could not start
                if e.code not in (None, 0):
                    raise ArenaCliError(
                        f"the server could not start on http://{host}:{port} (see the log)"
                    ) from e
                raise


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``; exit 3 with one sentence if it cannot be."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as e:
        raise ArenaCliError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(ACCEPT_BACKLOG)
    except OSError as e:
        sock.close()
        raise ArenaCliError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    return sock


def run_with(app: Any, service: LeagueService, grace: float) -> None:
    """Start ``service`` when ``app`` has started and stop it (within ``grace``) as it ends.

    Wraps the application's lifespan: the service starts after the application's own
    startup and stops before its own shutdown.
    """
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        async with inner(application) as state:
            await asyncio.to_thread(service.start)
            try:
                yield state
            finally:
                await asyncio.to_thread(service.stop, grace)

    app.router.lifespan_context = lifespan


@contextlib.contextmanager
def _league(home: Path) -> Iterator[League]:
    """The open league at ``home``, closed at the end; exit 3 if it cannot be opened."""
    try:
        opened = open_league(home)
    except LeagueError as e:
        raise ArenaCliError(str(e)) from e
    try:
        yield opened
    finally:
        opened.close()


@contextlib.contextmanager
def open_sandbox(kind: str, runtime: str) -> Iterator[Sandbox]:
    """The bots' sandbox, closed (every bot it started stopped) at the end."""
    try:
        box = choose_sandbox(
            "process" if kind == "process-unsafe" else "docker", SandboxLimits(), runtime=runtime
        )
    except SandboxUnavailable as e:
        raise ArenaCliError(
            f"{e}; a league runs strangers' bots in Docker (--sandbox process-unsafe runs "
            "them unprotected, for trusted bots only)"
        ) from e
    try:
        yield box
    finally:
        box.close()


@contextlib.contextmanager
def _server_sandbox(executor: str, kind: str, runtime: str) -> Iterator[Sandbox | None]:
    """This server's sandbox; None with a fleet, whose workers run every bot."""
    if executor == "celery":
        yield None
        return
    with open_sandbox(kind, runtime) as box:
        yield box


@contextlib.contextmanager
def _quiet_signals() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM once uvicorn has handled them.

    uvicorn catches them to shut down gracefully, then restores the handlers it found and
    raises the signal again; with the default handlers that would kill the process (or raise
    KeyboardInterrupt) before the sandbox and the database are closed.
    """
    previous = {s: signal.signal(s, _ignore) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _ignore(signum: int, frame: object) -> None:
    """Do nothing: the server is stopping already."""
