"""The league's side of a Celery fleet: publish queued matches, and take their results back.

``arena league serve --executor celery`` runs a :class:`CeleryExecutor` in place of the
local one. The database stays the source of truth; the broker (Redis) only delivers:

1. the **publisher** (a thread of the server) sends one task per *queued* match to the
   queue of the sandbox kind the league plays in (``matches.docker``; ``_fleet.py``). The
   message holds the match's id and nothing else: no seed, no secret;
2. a worker that takes the task **claims** that match through the league's HTTP API
   (:func:`claim_for_worker`): the same conditional ``UPDATE … WHERE status = 'queued'`` as
   the local executor's claim, which sets a lease owned by ``WORKER/RANDOM`` (the *claim*),
   and answers with what the match needs (its seed, each seat's source by content hash, the
   rules and the clock). A task delivered twice, or one for a match played meanwhile, finds
   the match no longer queued and ends there;
3. while it plays, the worker **renews** its lease (:func:`renew_for_worker`), and at the
   end **posts** the result (:func:`record_for_worker`), which goes through the same
   :func:`~arena.league.record_result` as a local result: one transaction, counted once,
   only if the claim still holds the match.

A worker that dies (SIGKILL, its machine gone) stops renewing: the league's requeue puts the
match back in the queue when its lease runs out, and the publisher sends it again, to any
worker. Celery's late acknowledgement redelivers the lost message as well; whichever copy
comes first claims the match, the other finds it taken. A broker that restarts empty loses
only messages: a queued match whose message is gone is published again after
``republish_after`` seconds, and a claimed one comes back through its lease.

Matches are claimed when a worker is free to play them, not when they are published, so a
lease never runs out while its message waits in the broker behind other matches.

Validation stays on the league server's own slots (a :class:`LocalExecutor` that plays no
matches): it reads and writes the database at every step.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena._runner import TimeControl
from arena.league._bots import Bot, BotVersion
from arena.league._db import unit_of_work
from arena.league._errors import Conflict, LeagueError, NotFound
from arena.league._executor import (
    DEFAULT_LEASE,
    MAX_ATTEMPTS,
    LocalExecutor,
    abandoned_result,
    release_match,
)
from arena.league._home import League
from arena.league._matches import Match, MatchSeat, MatchStatus, claim_match, renew_lease
from arena.league._results import record_abandoned, record_result
from arena.league._versions import seat_name
from arena.sandbox import Sandbox
from flipflop import MatchConfig

__all__ = [
    "DEFAULT_REPUBLISH",
    "CeleryExecutor",
    "FleetRules",
    "claim_for_worker",
    "fail_for_worker",
    "record_for_worker",
    "renew_for_worker",
]

logger = logging.getLogger(__name__)

DEFAULT_REPUBLISH = 60.0
"""Seconds after which a match still queued is published again (its message may be lost)."""
_PUBLISH_BATCH = 1000
"""The most queued matches one publishing round looks at (the scheduler keeps far fewer)."""


@dataclass(frozen=True, slots=True)
class FleetRules:
    """What every match a worker plays is played by: the league server's settings.

    Attributes:
        config: the rules (``seats`` is set from each match).
        clock: the bots' time limits.
        lease: how long a worker holds a match between renewals.
    """

    config: MatchConfig = dataclasses.field(default_factory=MatchConfig)
    clock: TimeControl = dataclasses.field(default_factory=TimeControl)
    lease: dt.timedelta = DEFAULT_LEASE


# ---------------------------------------------------------------------- the worker's calls


def claim_for_worker(
    session: Session, match_id: int, worker: str, rules: FleetRules
) -> dict[str, Any]:
    """Claim the queued match ``match_id`` for ``worker``; what it needs to play it.

    The answer (JSON): ``claim``, the lease owner the worker names in its later calls;
    ``attempt``; ``seed`` (hex, secret: only a worker with a token gets it); ``seats``, each
    seat's ``bot``, ``number``, ``name`` and source ``sha256``; ``config`` and ``clock``
    (the league's); ``lease_s``.

    Raises:
        NotFound: no such match.
        Conflict: the match is not queued (running elsewhere, or finished).
    """
    claim = f"{worker}/{secrets.token_hex(6)}"
    claimed = claim_match(session, claim, rules.lease, match_id=match_id)
    if claimed is None:
        if session.get(Match, match_id) is None:
            raise NotFound(f"no match {match_id}")
        raise Conflict(f"match {match_id} is not queued")
    seed = session.scalar(select(Match.seed).where(Match.id == match_id))
    rows = session.execute(
        select(Bot.name, BotVersion.number, BotVersion.source_sha256)
        .join(BotVersion, BotVersion.bot_id == Bot.id)
        .join(MatchSeat, MatchSeat.version_id == BotVersion.id)
        .where(MatchSeat.match_id == match_id)
        .order_by(MatchSeat.seat)
    ).all()
    config = dataclasses.replace(rules.config, seats=len(rows))
    logger.info(
        "match %d claimed by %s (attempt %d)",
        match_id,
        claim,
        claimed.attempt,
        extra={"match": match_id, "worker": claim, "attempt": claimed.attempt},
    )
    return {
        "match": match_id,
        "claim": claim,
        "attempt": claimed.attempt,
        "seed": seed,
        "seats": [
            {"bot": bot, "number": number, "name": seat_name(bot, number), "sha256": sha}
            for bot, number, sha in rows
        ],
        "config": dataclasses.asdict(config),
        "clock": dataclasses.asdict(rules.clock),
        "lease_s": rules.lease.total_seconds(),
    }


def _own(worker: str, claim: str, match_id: int) -> None:
    """Refuse a claim that is not one of ``worker``'s (another worker's, or made up)."""
    if not claim.startswith(worker + "/"):
        raise Conflict(f"{worker} does not hold match {match_id}")


def renew_for_worker(
    session: Session, match_id: int, worker: str, claim: str, rules: FleetRules
) -> None:
    """Extend the lease of ``claim`` (one of ``worker``'s) on a running match.

    Raises:
        Conflict: the claim no longer holds the match: stop playing it.
    """
    _own(worker, claim, match_id)
    if not renew_lease(session, match_id, claim, rules.lease):
        raise Conflict(f"{worker} no longer holds match {match_id}")


def record_for_worker(
    session: Session,
    league: League,
    match_id: int,
    worker: str,
    claim: str,
    record: Mapping[str, Any],
    *,
    replay_sha256: str,
    logs_sha256: Sequence[str | None],
) -> None:
    """Count the result a worker posts, exactly as a local one (``record_result``).

    Raises:
        LeagueError: the replay or a log is not in the artifact store (upload them first),
            or the record does not fit the match.
        Conflict: the claim no longer holds the match (it was requeued, or the result was
            counted already): nothing is written.
    """
    _own(worker, claim, match_id)
    for digest in (replay_sha256, *logs_sha256):
        if digest is not None and not league.artifacts.exists(digest):
            raise LeagueError(f"artifact {digest} is not in the league's store: upload it first")
    if not record_result(
        session, match_id, claim, record, replay_sha256=replay_sha256, logs_sha256=logs_sha256
    ):
        raise Conflict(f"{worker} no longer holds match {match_id}: its result is not counted")


def fail_for_worker(session: Session, match_id: int, worker: str, claim: str, error: str) -> bool:
    """A match the worker failed to play by the arena's fault: requeued, or void at the last.

    As the local executor's: back to the queue, until its :data:`MAX_ATTEMPTS`-th attempt,
    which is finished as void with ``error``. True if it was requeued.

    Raises:
        Conflict: the claim no longer holds the match.
    """
    _own(worker, claim, match_id)
    attempts = session.scalar(
        select(Match.attempts).where(Match.id == match_id, Match.lease_owner == claim)
    )
    if attempts is None:
        raise Conflict(f"{worker} no longer holds match {match_id}")
    if attempts < MAX_ATTEMPTS:
        release_match(session, match_id, claim)
        return True
    names = [
        seat_name(bot, number)
        for bot, number in session.execute(
            select(Bot.name, BotVersion.number)
            .join(BotVersion, BotVersion.bot_id == Bot.id)
            .join(MatchSeat, MatchSeat.version_id == BotVersion.id)
            .where(MatchSeat.match_id == match_id)
            .order_by(MatchSeat.seat)
        )
    ]
    record_abandoned(session, match_id, claim, abandoned_result(names, error, attempts))
    logger.error("match %d abandoned after %d attempts", match_id, attempts)
    return False


# ---------------------------------------------------------------------- the executor


class CeleryExecutor:
    """Publishes queued matches to a Celery fleet; validates versions on local slots.

    The same interface as :class:`~arena.league.LocalExecutor` (``start``, ``wake``,
    ``stop``, ``status``), so :class:`~arena.league.LeagueService` runs either.

    Args:
        league: the open league.
        sandbox: where this server validates versions (the caller's: not closed here).
        broker: the broker's URL (``redis://HOST:PORT/N``).
        sandbox_kind: the kind of sandbox the matches must be played in (its queue:
            ``matches.KIND``); a worker consumes only the queues of what it offers.
        slots: this server's validation slots.
        worker: the name of this server's leases (validations).
        lease: how long a validation is held between renewals.
        workdir: the validators' scratch space.
        validation: validate versions here (False: none at all).
        republish_after: seconds after which a match still queued is published again.
        poll: seconds between two publishing rounds (:meth:`wake` starts one at once).
    """

    def __init__(
        self,
        league: League,
        sandbox: Sandbox,
        *,
        broker: str,
        sandbox_kind: str,
        slots: int,
        worker: str | None = None,
        lease: dt.timedelta = DEFAULT_LEASE,
        workdir: Path,
        validation: bool = True,
        republish_after: float = DEFAULT_REPUBLISH,
        poll: float = 1.0,
    ) -> None:
        from arena.league._fleet import fleet_app, match_queue  # Celery: only when used

        self.league = league
        self.app = fleet_app(broker)
        self.queue = match_queue(sandbox_kind)
        self.republish_after = republish_after
        self.poll = poll
        self.validators = LocalExecutor(
            league,
            sandbox,
            slots=slots,
            worker=worker,
            lease=lease,
            workdir=workdir,
            validation=validation,
            matches=False,
        )
        self._published: dict[int, float] = {}
        self._sent = 0
        self._failures = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def worker(self) -> str:
        """This server's name (its validation leases')."""
        return self.validators.worker

    def start(self) -> None:
        """Start the validators and the publisher."""
        self.validators.start()
        self._thread = threading.Thread(target=self._run, name="publisher", daemon=True)
        self._thread.start()
        logger.info("publishing matches to %s", self.queue, extra={"queue": self.queue})

    def wake(self) -> None:
        """Publish what is queued now, and wake idle validators."""
        self.validators.wake()
        self._wake.set()

    def stop(self, grace: float = 30.0) -> None:
        """Stop publishing and stop the validators (see ``LocalExecutor.stop``).

        The fleet's matches are the workers': they finish and post their results, or go
        back to the queue when their leases run out.
        """
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.validators.stop(grace)
        self.app.close()

    def status(self) -> dict[str, Any]:
        """The validators' status, with what the publisher did under ``fleet``."""
        with self._lock:
            fleet = {
                "queue": self.queue,
                "published": self._sent,
                "publish_failures": self._failures,
                "waiting": len(self._published),
            }
        return {**self.validators.status(), "fleet": fleet}

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._publish()
            except Exception:  # the database or the broker away: the next round tries again
                logger.exception("publishing queued matches failed")
                with self._lock:
                    self._failures += 1
            self._wake.wait(self.poll)
            self._wake.clear()

    def _publish(self) -> None:
        """Send a task for each queued match not sent in the last ``republish_after`` s."""
        from arena.league._fleet import PLAY_MATCH

        with unit_of_work(self.league.sessions) as session:
            queued = session.scalars(
                select(Match.id)
                .where(Match.status == MatchStatus.QUEUED)
                .order_by(Match.id)
                .limit(_PUBLISH_BATCH)
            ).all()
        # A match claimed since is forgotten: if its lease runs out, it is queued again and
        # published at once.
        published = {i: self._published[i] for i in queued if i in self._published}
        self._published = published
        for match_id in queued:
            if self._stop.is_set():
                return
            sent = published.get(match_id)
            if sent is not None and time.monotonic() - sent < self.republish_after:
                continue
            self.app.send_task(
                PLAY_MATCH,
                args=[match_id],
                queue=self.queue,
                retry=True,
                retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
            )
            published[match_id] = time.monotonic()
            with self._lock:
                self._sent += 1
            logger.debug("match %d published", match_id, extra={"match": match_id})
