"""The league service: the scheduler, the requeue of lost matches, and the executor, together.

``arena league serve`` runs one :class:`LeagueService` beside the HTTP API. Its parts share
nothing but the database, so any of them may die at any moment (``tests/arena/league/
test_crash.py`` kills the whole server with SIGKILL, again and again):

- the **scheduler** tops the queue up to ``target_queued`` matches (``schedule``: duplicate
  groups of active versions, new ones first, then the least played, near in rating);
- the **requeue** puts every running match whose lease ran out back in the queue
  (``requeue_expired``): the matches of a server that died, or of a slot that stalled;
- the **final** of a season, when one is under way, moves on once a round is played
  (``advance_finals``: look, then decide or queue the next round), whether or not rated
  matches are scheduled;
- the **executor** (:class:`~arena.league._executor.LocalExecutor`) validates versions and
  plays matches on its slots; with a ``broker``, a
  :class:`~arena.league._dispatch.CeleryExecutor` hands matches and validations to a
  Celery fleet instead (``docs/deploy.md``).

The scheduler and the requeue run on one housekeeping thread, each at its own interval, each
in its own short transaction; an error in one round (the database away for a moment) is
logged and the next round tries again.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
import time
from pathlib import Path
from typing import Any

from arena._scratch import drop_scratch, make_scratch
from arena.league._db import unit_of_work, utcnow
from arena.league._dispatch import DEFAULT_REPUBLISH, CeleryExecutor
from arena.league._executor import DEFAULT_LEASE, LocalExecutor
from arena.league._home import League
from arena.league.matches._matches import requeue_expired
from arena.league.matches._scheduler import schedule
from arena.league.matches._seasons import advance_finals
from arena.match._runner import TimeControl
from arena.sandbox import Sandbox
from flipflop import MatchConfig

__all__ = ["LeagueService"]

logger = logging.getLogger(__name__)

_REQUEUE_MAX_S = 5.0
"""The longest interval between two requeue rounds (a third of the lease if shorter)."""


class LeagueService:
    """Scheduler, requeue and executor of one league server.

    Args:
        league: the open league.
        sandbox: where bots run (the caller's: not closed here); None with a ``broker``.
        slots: the executor's slots (matches or validations at once); with a ``broker``,
            only the scheduler's default ``target_queued`` depends on them.
        worker: the executor's name (default: host, process id and a random part).
        lease: how long a match or validation is held between renewals.
        workdir: the executor's scratch space (default: a new temporary directory, removed
            at :meth:`stop`).
        config: the rules of every match (``seats`` comes from each match).
        clock: the bots' time limits.
        target_queued: the queue length the scheduler keeps (default: twice the slots).
        max_per_version: the most queued and running matches a version may be in.
        table_sizes: the smallest and largest table the scheduler forms.
        placement_matches: counted matches below which a version is new (seated first).
        scheduling: schedule new matches; False drains the queue (plays what is queued).
        validation: validate submitted versions as well as play matches.
        schedule_every: seconds between two scheduler rounds.
        requeue_every: seconds between two requeue rounds (default: a third of the lease,
            at most 5 s).
        rng: the scheduler's source of random choices (deal seeds are always secret).
        broker: a Celery broker's URL (``redis://HOST:PORT/N``): the matches are published
            there for a fleet of ``arena worker`` to play; None plays them on the slots.
        fleet_sandbox: the sandbox kind the fleet must play matches in (its queue).
        republish_after: seconds after which the fleet's queued matches are published again.

    Example::

        service = LeagueService(league, sandbox=choose_sandbox("docker"), slots=4)
        service.start()
        ...
        service.stop(grace=30)
    """

    def __init__(
        self,
        league: League,
        *,
        sandbox: Sandbox | None,
        slots: int,
        worker: str | None = None,
        lease: dt.timedelta = DEFAULT_LEASE,
        workdir: Path | None = None,
        config: MatchConfig | None = None,
        clock: TimeControl | None = None,
        target_queued: int | None = None,
        max_per_version: int = 10,
        table_sizes: tuple[int, int] = (3, 5),
        placement_matches: int = 10,
        scheduling: bool = True,
        validation: bool = True,
        schedule_every: float = 1.0,
        requeue_every: float | None = None,
        rng: random.Random | None = None,
        broker: str | None = None,
        fleet_sandbox: str = "docker",
        republish_after: float = DEFAULT_REPUBLISH,
    ) -> None:
        self.league = league
        self._own_workdir = workdir is None
        self.workdir = workdir or make_scratch("ffa-league-")
        self.executor: LocalExecutor | CeleryExecutor
        if broker is None:
            if sandbox is None:
                raise ValueError("a league service without a broker needs a sandbox")
            self.executor = LocalExecutor(
                league,
                sandbox,
                slots=slots,
                worker=worker,
                lease=lease,
                workdir=self.workdir,
                config=config,
                clock=clock,
                validation=validation,
            )
        else:
            self.executor = CeleryExecutor(
                league,
                broker=broker,
                sandbox_kind=fleet_sandbox,
                worker=worker,
                validation=validation,
                republish_after=republish_after,
            )
        self.target_queued = 2 * slots if target_queued is None else target_queued
        self.max_per_version = max_per_version
        self.table_sizes = table_sizes
        self.placement_matches = placement_matches
        self.scheduling = scheduling
        self.schedule_every = schedule_every
        self.requeue_every = (
            min(lease.total_seconds() / 3, _REQUEUE_MAX_S)
            if requeue_every is None
            else requeue_every
        )
        self.rng = rng or random.Random()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._scheduled = 0
        self._requeued = 0
        self._started: dt.datetime | None = None

    def start(self) -> None:
        """Start the executor, then the scheduler and the requeue."""
        self._started = utcnow()
        self.executor.start()
        self._thread = threading.Thread(target=self._housekeep, name="housekeeping", daemon=True)
        self._thread.start()
        logger.info(
            "league service started: %d slots, scheduling %s",
            self.executor.status()["slots"],
            "on" if self.scheduling else "off (draining the queue)",
            extra={"league": self.league.config.name, "worker": self.executor.worker},
        )

    def stop(self, grace: float = 30.0) -> None:
        """Stop scheduling, then stop the executor within ``grace`` seconds (see its stop)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.executor.stop(grace)
        if self._own_workdir:
            drop_scratch(self.workdir)

    def live_replays(self) -> dict[int, Path]:
        """Where each match being played here writes its replay (the live page's progress).

        Empty with a worker fleet: its matches are played on other machines, and the live
        page shows them without progress.
        """
        if isinstance(self.executor, CeleryExecutor):
            return {}
        return self.executor.live_replays()

    def status(self) -> dict[str, Any]:
        """What the service is doing: the executor's status and the scheduler's counts."""
        with self._lock:
            scheduled, requeued = self._scheduled, self._requeued
        return {
            "executor": self.executor.status(),
            "scheduling": self.scheduling,
            "target_queued": self.target_queued,
            "scheduled": scheduled,
            "requeued": requeued,
            "started": None if self._started is None else self._started.isoformat(),
        }

    # ------------------------------------------------------------------ housekeeping

    def _housekeep(self) -> None:
        next_requeue = next_schedule = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= next_requeue:
                self._requeue()
                next_requeue = time.monotonic() + self.requeue_every
            if now >= next_schedule:
                self._advance_finals()
                if self.scheduling:
                    self._schedule()
                next_schedule = time.monotonic() + self.schedule_every
            due = min(next_requeue, next_schedule)
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return

    def _requeue(self) -> None:
        try:
            with unit_of_work(self.league.sessions) as session:
                ids = requeue_expired(session)
        except Exception:
            logger.exception("requeueing expired matches failed")
            return
        if ids:
            with self._lock:
                self._requeued += len(ids)
            logger.warning(
                "%d matches requeued: their lease ran out",
                len(ids),
                extra={"matches": ids},
            )
            self.executor.wake()

    def _advance_finals(self) -> None:
        try:
            with unit_of_work(self.league.sessions) as session:
                ids = advance_finals(session)
        except Exception:
            logger.exception("moving the season's final on failed")
            return
        if ids:
            with self._lock:
                self._scheduled += len(ids)
            logger.info("%d matches of the final queued", len(ids), extra={"matches": ids})
            self.executor.wake()

    def _schedule(self) -> None:
        try:
            with unit_of_work(self.league.sessions) as session:
                ids = schedule(
                    session,
                    rng=self.rng,
                    target_queued=self.target_queued,
                    max_per_version=self.max_per_version,
                    table_sizes=self.table_sizes,
                    placement_matches=self.placement_matches,
                )
        except Exception:
            logger.exception("scheduling failed")
            return
        if ids:
            with self._lock:
                self._scheduled += len(ids)
            logger.info("%d matches queued", len(ids), extra={"matches": ids})
            self.executor.wake()
