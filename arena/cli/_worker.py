"""``arena worker``: play a league's matches on this machine, as one of its Celery fleet.

The worker takes match tasks from the broker (Redis), as many at once as ``--concurrency``
allows, each on a thread of this process, and plays them in this machine's sandbox. All it
knows of a match it asks the league over HTTP with its worker token (``arena league worker
add NAME``): it holds no database credentials. See ``docs/deploy.md``.

With ``--prestart`` each claim also takes the next match, while more wait than are being
played, and the bots of that one start while the first plays (``arena.league._fleet``). Off by
default: measured in the process sandbox it gained nothing, and Celery's delivery of the
second match's message, found taken, cost a slot about a second (docs/deploy.md, "Measured").

SIGTERM (or Ctrl-C) drains it: it takes no new task and stops once its running matches are
played and reported; a match claimed ahead is handed back to the queue, not played. SIGKILL
loses nothing: its matches' leases run out and other workers play them again.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import httpx

from arena._scratch import drop_scratch, make_scratch
from arena.cli._errors import ArenaCliError
from arena.cli._options import (
    checked_broker,
    insecure_broker_option,
    league_sandbox_option,
    log_level_option,
    runtime_option,
)
from arena.cli._serve import PROCESS_SANDBOX_WARNING, open_sandbox
from arena.league._metrics import setup_logging

if TYPE_CHECKING:
    from arena.league._fleet import FleetPlayer

__all__ = ["worker"]

logger = logging.getLogger("arena.worker")


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arena" / "worker"


@click.command()
@click.option(
    "--broker",
    required=True,
    metavar="URL",
    envvar="ARENA_BROKER",
    help="The fleet's Celery broker: redis://:PASSWORD@HOST:PORT/N (or rediss://, over TLS); "
    "without a password only on this machine's loopback.",
)
@click.option(
    "--league",
    "league_url",
    required=True,
    metavar="URL",
    envvar="ARENA_LEAGUE_URL",
    help="The league server's base URL, e.g. http://league:8000 (or the URL a ladder of "
    "`arena run --executor celery` prints).",
)
@click.option(
    "--token",
    required=True,
    envvar="ARENA_WORKER_TOKEN",
    show_envvar=True,
    help="This worker's token (arena league worker add NAME). Prefer the environment "
    "variable: a command line is visible to every user of the machine.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Matches played at once on this machine.",
)
@click.option(
    "--prestart/--no-prestart",
    default=False,
    show_default=True,
    help="Claim the next match with each one (while more matches wait than are being played) "
    "and start its bots while the first plays, so that its starts are hidden behind play "
    "(worth it where bots start slowly, under gVisor; docs/deploy.md).",
)
@click.option(
    "--hostname",
    metavar="NAME",
    help="This worker's Celery node name.  [default: WORKER@HOST]",
)
@league_sandbox_option
@runtime_option
@click.option(
    "--cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where bots' sources are kept by content hash.  [default: ~/.cache/arena/worker]",
)
@insecure_broker_option
@log_level_option
def worker(
    broker: str,
    insecure_broker: bool,
    league_url: str,
    token: str,
    concurrency: int,
    prestart: bool,
    hostname: str | None,
    sandbox: str,
    runtime: str,
    cache: Path | None,
    log_level: str,
) -> None:
    """Play the matches of the league at --league that its server publishes on --broker.

    --league may also be the URL an `arena run --executor celery` ladder prints: the worker
    then plays that ladder's matches.

    The worker offers one kind of sandbox (--sandbox) and gets only the matches to be played
    in it. Its token is checked before it takes anything: a refused token exits with 3.

    \b
    Examples:
        export ARENA_WORKER_TOKEN=ffw_…      # from: arena league worker add box1
        arena worker --broker redis://:PASSWORD@redis:6379/0 --league http://league:8000 \\
            --concurrency 8
    """
    # Imported here: Celery is needed by this command alone.
    from celery.signals import worker_shutting_down

    from arena.executors._celery import fleet_app, worker_queues
    from arena.league._fleet import FleetPlayer

    checked_broker(broker, insecure_broker)
    setup_logging(log_level.upper())
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per call to the league
    if sandbox == "process-unsafe":
        click.secho(PROCESS_SANDBOX_WARNING, fg="red", bold=True, err=True)
    with open_sandbox(sandbox, runtime) as box:
        workdir = make_scratch("ffw-")
        player = FleetPlayer(
            league_url,
            token,
            box,
            workdir=workdir,
            cache=cache or _default_cache(),
            ahead=prestart,
            slots=concurrency,
        )
        try:
            hello = _hello(player, league_url)
            app = fleet_app(broker)
            app.player = player
            # SIGTERM: the matches being played finish; those claimed ahead are handed back.
            worker_shutting_down.connect(lambda **_: player.drain(), weak=False)
            queues = worker_queues(box.kind.value, ladder=hello.get("kind") == "ladder")
            node = hostname or f"{hello['worker']}@{socket.gethostname()}"
            logger.info("worker %s takes %s for %s", node, ", ".join(queues), league_url)
            controller = app.Worker(
                hostname=node,
                concurrency=concurrency,
                pool="threads",
                queues=queues,
                loglevel=log_level.upper(),
                without_gossip=True,
                without_mingle=True,
                without_heartbeat=False,
            )
            controller.start()
            code = controller.exitcode
        finally:
            player.close()
            drop_scratch(workdir)
    if code:
        raise SystemExit(code)


def _hello(player: FleetPlayer, url: str) -> dict[str, Any]:
    """Who the league (or ladder) says this worker is; exit 3 if refused or unreachable."""
    from arena.league._fleet import WorkerRefused

    try:
        return player.hello()
    except WorkerRefused as e:
        raise ArenaCliError(str(e)) from e
    except httpx.HTTPError as e:
        raise ArenaCliError(f"cannot reach the league at {url}: {e}") from e
