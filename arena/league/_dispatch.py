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

**One match ahead.** A worker's claim may ask for the next match too (``ahead``): while more
matches wait than are being played, so that every slot of the fleet has another to play, the
league claims the next queued one (in its play order) for the same worker, and the worker
starts that match's bots while the first one plays (``arena.match._prestart``), then plays it
in the same task. Its own message, whoever gets it, then finds it taken. Nothing is claimed
ahead while a version waits for validation. Nothing else changes: it is leased, renewed and
counted as any claim; a worker that dies loses both to their leases; a worker that stops
hands the second back (:func:`release_for_worker`).

Validations go the same way, ahead of matches: a version waiting for validation is
published to ``validation.KIND``, which a worker consumes before ``matches.KIND``; the worker
claims it (:func:`claim_version_for_worker`), runs the steps in its own sandbox (the house
bots are bundled with the arena) and reports each step's start and end, which the league
writes with the same :class:`~arena.league._validation.LeagueLedger` as a local validator.

A worker is trusted to play, not to judge (issue 24, finding 5):

- it claims only what was published: each message carries a **ticket**, the league's HMAC
  of the job and its attempt (:func:`job_ticket`), which the claim must present; a match
  requeued since has another ticket;
- it gets a source only for a match or validation its claim holds, and stores artifacts
  (replays, logs) only under a claim it holds, within a cap per claim (``api/_worker_routes.py``);
- its result is checked by the league's referee (``matches/_referee.py``) against the replay it
  uploaded, re-dealt from the seed the league holds, before it counts; a validation's match
  step likewise, and a "passed" whose replay shows the version forfeited is refused.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena._errors import Conflict, LeagueError, NotFound
from arena.league._db import unit_of_work, utcnow
from arena.league._executor import (
    DEFAULT_LEASE,
    HOST_RETRY_AFTER,
    MAX_ATTEMPTS,
    abandoned_result,
    default_worker,
    release_match,
    retry_after,
)
from arena.league._home import League
from arena.league._validation import (
    VALIDATION_HANDS,
    LeagueLedger,
    StepResult,
    begin_validation,
    validation_seed,
)
from arena.league.bots._bots import Bot, BotVersion, StepKind, StepOutcome, VersionStatus, seat_name
from arena.league.bots._versions import PENDING, claim_validation, waiting_versions
from arena.league.matches._matches import (
    Match,
    MatchSeat,
    MatchStatus,
    claim_match,
    claimable,
    play_order,
    renew_lease,
    seat_names,
)
from arena.league.matches._referee import (
    RefereeRefused,
    check_replay,
    forfeited_seats,
    replay_players,
)
from arena.league.matches._results import record_abandoned, record_result
from arena.match._runner import TimeControl
from flipflop import MatchConfig

__all__ = [
    "DEFAULT_REPUBLISH",
    "CeleryExecutor",
    "FleetRules",
    "claim_for_worker",
    "claim_version_for_worker",
    "end_step_for_worker",
    "fail_for_worker",
    "holds_job",
    "job_ticket",
    "may_fetch_source",
    "record_for_worker",
    "release_for_worker",
    "renew_for_worker",
    "renew_validation_for_worker",
    "start_step_for_worker",
    "validation_ledger",
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


MATCH_JOB = "match"
VALIDATION_JOB = "version"
"""The kinds of job a ticket is for (:func:`job_ticket`)."""


def job_ticket(key: bytes, kind: str, job: int, attempt: int) -> str:
    """The ticket a published job's message carries: a claim of it must present it.

    HMAC-SHA256 of the job's kind (:data:`MATCH_JOB`, :data:`VALIDATION_JOB`), its id and
    its attempt under the league's key: a worker cannot make one for a job it was not sent,
    and a match put back in the queue (another attempt) has a new one.
    """
    message = f"flipflop-arena/ticket/{kind}/{job}/{attempt}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:32]


def _check_ticket(key: bytes, kind: str, job: int, attempt: int, ticket: str) -> None:
    if not hmac.compare_digest(job_ticket(key, kind, job, attempt), ticket):
        raise Conflict(
            f"{kind} {job} was not published with this ticket (it may have been played or"
            " put back in the queue since): a worker claims only the jobs it was sent"
        )


def claim_for_worker(
    session: Session,
    match_id: int,
    worker: str,
    rules: FleetRules,
    *,
    key: bytes,
    ticket: str,
    ahead: bool = False,
) -> dict[str, Any]:
    """Claim the queued match ``match_id`` for ``worker``; what it needs to play it.

    ``ticket`` is the one its message carried (:func:`job_ticket`).

    The answer (JSON): ``claim``, the lease owner the worker names in its later calls;
    ``attempt``; ``seed`` (hex, secret: only a worker with a token gets it); ``seats``, each
    seat's ``bot``, ``number``, ``name`` and source ``sha256``; ``config`` and ``clock``
    (the league's); ``lease_s``. With ``ahead``, and while more matches are claimable than
    are being played, ``next``: the next queued match, claimed for ``worker`` as well (its
    own claim, the same fields), to play after this one (the module's "One match ahead").

    Raises:
        NotFound: no such match.
        Conflict: the match is not queued (running elsewhere, or finished), or the ticket is
            not the one its message carried.
    """
    attempts = session.scalar(
        select(Match.attempts).where(Match.id == match_id, Match.status == MatchStatus.QUEUED)
    )
    if attempts is not None:
        _check_ticket(key, MATCH_JOB, match_id, attempts, ticket)
    claim = f"{worker}/{secrets.token_hex(6)}"
    claimed = claim_match(session, claim, rules.lease, match_id=match_id)
    if claimed is None:
        if session.get(Match, match_id) is None:
            raise NotFound(f"no match {match_id}")
        raise Conflict(f"match {match_id} is not queued")
    plan = _match_plan(session, match_id, claim, claimed.attempt, rules)
    if ahead:
        follow = _claim_ahead(session, worker, rules)
        if follow is not None:
            plan["next"] = follow
    return plan


def _claim_ahead(session: Session, worker: str, rules: FleetRules) -> dict[str, Any] | None:
    """The next queued match, claimed for ``worker`` while more wait than are being played.

    None while a version waits for validation: the worker's slot goes back to the broker,
    whose validation queue it reads first, so a submission is still validated ahead of
    rated matches.
    """
    now = utcnow()
    if waiting_versions(session, limit=1, now=now):
        return None
    waiting = session.scalar(select(func.count()).select_from(Match).where(claimable(now)))
    playing = session.scalar(
        select(func.count()).select_from(Match).where(Match.status == MatchStatus.RUNNING)
    )
    if not waiting or waiting <= (playing or 0):
        return None  # an idle slot elsewhere may be waiting for it: leave it to the broker
    claim = f"{worker}/{secrets.token_hex(6)}"
    claimed = claim_match(session, claim, rules.lease, now=now)
    if claimed is None:
        return None
    return _match_plan(session, claimed.id, claim, claimed.attempt, rules)


def _match_plan(
    session: Session, match_id: int, claim: str, attempt: int, rules: FleetRules
) -> dict[str, Any]:
    """What a worker needs to play the match ``match_id`` that ``claim`` holds."""
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
        attempt,
        extra={"match": match_id, "worker": claim, "attempt": attempt},
    )
    return {
        "match": match_id,
        "claim": claim,
        "attempt": attempt,
        "seed": seed,
        "seats": [
            {"bot": bot, "number": number, "name": seat_name(bot, number), "sha256": sha}
            for bot, number, sha in rows
        ],
        "config": dataclasses.asdict(config),
        "clock": dataclasses.asdict(rules.clock),
        "lease_s": rules.lease.total_seconds(),
    }


def release_for_worker(session: Session, match_id: int, worker: str, claim: str) -> None:
    """Hand back a match that ``worker``'s claim holds and has not begun.

    A stopping worker's match claimed ahead: queued again at once, its attempt given back.

    Raises:
        Conflict: the claim does not hold the match (another worker's, made up, or lost).
    """
    _own(worker, claim, match_id)
    if not release_match(session, match_id, claim, refund=True):
        raise Conflict(f"{worker} no longer holds match {match_id}")
    logger.info("match %d handed back by %s", match_id, claim, extra={"match": match_id})


def _own(worker: str, claim: str, match_id: int) -> None:
    """Refuse a claim that is not one of ``worker``'s (another worker's, or made up)."""
    if not claim.startswith(worker + "/"):
        raise Conflict(f"{worker} does not hold match {match_id}")


def holds_job(session: Session, worker: str, claim: str) -> int | None:
    """How many seats the job ``claim`` (one of ``worker``'s) holds; None: nothing.

    A running match's seats, or 1 for a validation under way; None when the claim holds
    nothing (made up, lost or ended).
    """
    if not claim.startswith(worker + "/"):
        return None
    match_id = session.scalar(
        select(Match.id).where(Match.lease_owner == claim, Match.status == MatchStatus.RUNNING)
    )
    if match_id is not None:
        return len(seat_names(session, match_id))
    validating = session.scalar(
        select(BotVersion.id).where(BotVersion.lease_owner == claim, BotVersion.status.in_(PENDING))
    )
    return None if validating is None else 1


def may_fetch_source(session: Session, worker: str, claim: str, sha256: str) -> bool:
    """Whether the job ``claim`` (one of ``worker``'s) plays or validates the source ``sha256``.

    A worker gets the sources of the matches and validations it holds, no others (issue 24,
    finding 5: a worker's token once downloaded any version's source).
    """
    if not claim.startswith(worker + "/"):
        return False
    in_match = session.scalar(
        select(Match.id)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .join(BotVersion, BotVersion.id == MatchSeat.version_id)
        .where(
            Match.lease_owner == claim,
            Match.status == MatchStatus.RUNNING,
            BotVersion.source_sha256 == sha256,
        )
        .limit(1)
    )
    if in_match is not None:
        return True
    validating = session.scalar(
        select(BotVersion.id).where(
            BotVersion.lease_owner == claim,
            BotVersion.status.in_(PENDING),
            BotVersion.source_sha256 == sha256,
        )
    )
    return validating is not None


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
    rules: FleetRules,
) -> None:
    """Count the result a worker posts, exactly as a local one (``record_result``).

    First the referee checks the replay against the match's seed, its seats and the
    league's rules, and the record against the replay (``_referee.check_replay``).

    Raises:
        LeagueError: the replay or a log is not in the artifact store (upload them first),
            or the record does not fit the match.
        RefereeRefused: the engine does not confirm the replay, or the record is not the
            replay's.
        Conflict: the claim no longer holds the match (it was requeued, or the result was
            counted already): nothing is written.
    """
    _own(worker, claim, match_id)
    for digest in (replay_sha256, *logs_sha256):
        if digest is not None and not league.artifacts.exists(digest):
            raise LeagueError(f"artifact {digest} is not in the league's store: upload it first")
    row = session.execute(
        select(Match.seed, Match.status, Match.lease_owner).where(Match.id == match_id)
    ).one_or_none()
    if row is None or row.status is not MatchStatus.RUNNING or row.lease_owner != claim:
        raise Conflict(f"{worker} no longer holds match {match_id}: its result is not counted")
    names = seat_names(session, match_id)
    check_replay(
        league.artifacts.get(replay_sha256),
        row.seed,
        players=names,
        config=dataclasses.replace(rules.config, seats=len(names)),
        record=record,
    )
    if not record_result(
        session,
        match_id,
        claim,
        record,
        replay_sha256=replay_sha256,
        logs_sha256=logs_sha256,
        fault_limits=league.config.faults,
    ):
        raise Conflict(f"{worker} no longer holds match {match_id}: its result is not counted")


def fail_for_worker(
    session: Session, match_id: int, worker: str, claim: str, error: str, *, host: bool = False
) -> bool:
    """A match the worker failed to play by the arena's fault: requeued, or void at the last.

    As the local executor's: back to the queue after a back-off (``retry_after``), until its
    :data:`MAX_ATTEMPTS`-th attempt, which is finished as void with ``error``; a failure of
    the worker's own resources (``host``: no descriptor left, a full disk) gives its attempt
    back, waits ``HOST_RETRY_AFTER`` and never voids it. True if it was requeued.

    Raises:
        Conflict: the claim no longer holds the match.
    """
    _own(worker, claim, match_id)
    attempts = session.scalar(
        select(Match.attempts).where(Match.id == match_id, Match.lease_owner == claim)
    )
    if attempts is None:
        raise Conflict(f"{worker} no longer holds match {match_id}")
    if host:
        release_match(session, match_id, claim, wait=HOST_RETRY_AFTER, refund=True)
        return True
    if attempts < MAX_ATTEMPTS:
        release_match(session, match_id, claim, wait=retry_after(attempts))
        return True
    names = seat_names(session, match_id)
    record_abandoned(session, match_id, claim, abandoned_result(names, error, attempts))
    logger.error("match %d abandoned after %d attempts", match_id, attempts)
    return False


def claim_version_for_worker(
    league: League, version_id: int, worker: str, rules: FleetRules, *, ticket: str
) -> dict[str, Any]:
    """Claim the version ``version_id`` waiting for validation for ``worker``; what it needs.

    ``ticket`` is the one its message carried (:func:`job_ticket`, attempt 0).

    The answer (JSON): ``claim``; the version's ``bot``, ``number``, ``name`` (its seat
    name) and source ``sha256``; ``table``, how its validation match looks to the bots
    (``ValidationTable``, its seed included: a worker's token is trusted with seeds);
    ``lease_s``. Its earlier steps are forgotten.

    Raises:
        Conflict: the version is not waiting for a validator, or the ticket is not its.
    """
    _check_ticket(league.key, VALIDATION_JOB, version_id, 0, ticket)
    claim = f"{worker}/{secrets.token_hex(6)}"
    with unit_of_work(league.sessions) as session:
        claimed = claim_validation(session, claim, rules.lease, version_id=version_id)
    began = (
        None
        if claimed is None
        else begin_validation(league, version_id, claim, rules.lease, rules.config, rules.clock)
    )
    if began is None:
        raise Conflict(f"version {version_id} is not waiting for validation")
    bot, number, sha256, table = began
    logger.info("version %d claimed by %s for validation", version_id, claim)
    return {
        "version": version_id,
        "claim": claim,
        "bot": bot,
        "number": number,
        "name": seat_name(bot, number),
        "sha256": sha256,
        "table": table.to_json(),
        "lease_s": rules.lease.total_seconds(),
    }


def validation_ledger(
    league: League, version_id: int, worker: str, claim: str, rules: FleetRules
) -> LeagueLedger:
    """The ledger of the validation ``claim`` (one of ``worker``'s) holds.

    Raises:
        Conflict: ``claim`` is not one of ``worker``'s.
    """
    _own(worker, claim, version_id)
    return LeagueLedger(league, version_id, claim, rules.lease)


def _held_or_refused(done: bool, worker: str, version_id: int) -> None:
    if not done:
        raise Conflict(f"{worker} no longer holds the validation of version {version_id}")


def start_step_for_worker(ledger: LeagueLedger, worker: str, kind: StepKind) -> None:
    """Record a worker's step started (see ``Ledger.start_step``).

    Raises:
        Conflict: the claim no longer holds the version.
    """
    _held_or_refused(ledger.start_step(kind), worker, ledger.version_id)


def end_step_for_worker(
    ledger: LeagueLedger,
    worker: str,
    kind: StepKind,
    result: StepResult,
    *,
    last: bool,
    replay_sha256: str | None = None,
    rules: FleetRules | None = None,
) -> VersionStatus:
    """Record a worker's step ended; the version's status after it.

    A validation match that passed must come with its replay (``replay_sha256``, uploaded
    first), which the referee checks: dealt from the seed the league derived for this
    validation, the version at one seat, the league's rules for a validation match, every
    action legal, and the version not forfeited in it.

    Raises:
        Conflict: the claim no longer holds the version.
        RefereeRefused: a passed match step whose replay the engine does not confirm, or
            shows the version forfeited.
    """
    if kind is StepKind.MATCH and result.outcome is StepOutcome.PASSED:
        _check_validation_match(ledger, replay_sha256, rules or FleetRules())
    after = ledger.end_step(kind, result, last=last)
    _held_or_refused(after is not None, worker, ledger.version_id)
    assert after is not None
    return after


def _check_validation_match(
    ledger: LeagueLedger, replay_sha256: str | None, rules: FleetRules
) -> None:
    """Refuse a validation match reported passed that its replay does not bear out."""
    league = ledger.league
    if replay_sha256 is None or not league.artifacts.exists(replay_sha256):
        raise RefereeRefused(
            "a validation match reported passed needs its replay: upload it, then name it"
        )
    data = league.artifacts.get(replay_sha256)
    with unit_of_work(league.sessions) as session:
        bot, number = session.execute(
            select(Bot.name, BotVersion.number)
            .join(Bot, Bot.id == BotVersion.bot_id)
            .where(BotVersion.id == ledger.version_id)
        ).one()
    own = seat_name(bot, number)
    players = replay_players(data)
    if players.count(own) != 1 or not 3 <= len(players) <= 5:
        raise RefereeRefused(f"the validation match's replay does not seat {own} once")
    config = dataclasses.replace(
        rules.config,
        seats=len(players),
        hand_cap=min(VALIDATION_HANDS, rules.config.hand_cap or VALIDATION_HANDS),
    )
    seed = validation_seed(league.key, f"{ledger.version_id}/{ledger.worker}")
    check_replay(data, seed, players=None, config=config)
    if players.index(own) in forfeited_seats(data):
        raise RefereeRefused(
            f"the validation match's replay shows {own} forfeited: it did not pass"
        )


def renew_validation_for_worker(ledger: LeagueLedger, worker: str) -> None:
    """Renew a worker's validation lease.

    Raises:
        Conflict: the claim no longer holds the version.
    """
    _held_or_refused(ledger.renew(), worker, ledger.version_id)


# ---------------------------------------------------------------------- the executor


class CeleryExecutor:
    """Publishes queued matches and waiting validations to a Celery fleet.

    The same interface as :class:`~arena.league.LocalExecutor` (``start``, ``wake``,
    ``stop``, ``status``), so :class:`~arena.league.LeagueService` runs either; it plays
    and validates nothing itself.

    Args:
        league: the open league.
        broker: the broker's URL (``redis://HOST:PORT/N``).
        sandbox_kind: the kind of sandbox the fleet must play and validate in (its queues:
            ``validation.KIND`` and ``matches.KIND``); a worker consumes only the queues of
            the sandbox it offers.
        worker: this server's name, in its status.
        validation: publish versions waiting for validation (False: only matches).
        republish_after: seconds after which a match (or a version) still waiting is
            published again.
        poll: seconds between two publishing rounds (:meth:`wake` starts one at once).
    """

    def __init__(
        self,
        league: League,
        *,
        broker: str,
        sandbox_kind: str,
        worker: str | None = None,
        validation: bool = True,
        republish_after: float = DEFAULT_REPUBLISH,
        poll: float = 1.0,
    ) -> None:
        from arena.executors._celery import fleet_app  # Celery: only when used

        self.league = league
        self.app = fleet_app(broker)
        self.kind = sandbox_kind
        self.worker = worker or default_worker()
        self.validation = validation
        self.republish_after = republish_after
        self.poll = poll
        self._published: dict[tuple[str, int, int], float] = {}
        self._sent: Counter[str] = Counter()
        self._failures = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the publisher."""
        self._thread = threading.Thread(target=self._run, name="publisher", daemon=True)
        self._thread.start()
        logger.info("publishing to the fleet's %s queues", self.kind, extra={"queue": self.kind})

    def wake(self) -> None:
        """Publish what is waiting now."""
        self._wake.set()

    def stop(self, grace: float = 30.0) -> None:
        """Stop publishing.

        The fleet's work is the workers': they finish it and report, or it goes back to
        the queue when their leases run out. ``grace`` is for the local executor's sake.
        """
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.app.close()

    def status(self) -> dict[str, Any]:
        """The local executor's keys (no slots here) and what the publisher did (``fleet``)."""
        with self._lock:
            fleet = {
                "kind": self.kind,
                "published": dict(self._sent),
                "publish_failures": self._failures,
                "waiting": len(self._published),
            }
        return {
            "worker": self.worker,
            "slots": 0,
            "busy": 0,
            "matches": [],
            "validations": [],
            "stopping": self._stop.is_set(),
            "played": {},
            "faults": {},
            "validated": {},
            "match_seconds": 0.0,
            "bot_starts": 0,
            "prestarted": 0,
            "fleet": fleet,
        }

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._publish()
            except Exception:  # the database or the broker away: the next round tries again
                logger.exception("publishing to the fleet failed")
                with self._lock:
                    self._failures += 1
            self._wake.wait(self.poll)
            self._wake.clear()

    def _publish(self) -> None:
        """Send a task for each job waiting and not sent in the last ``republish_after`` s."""
        from arena.executors._celery import PLAY_MATCH, VALIDATE, match_queue, validation_queue

        with unit_of_work(self.league.sessions) as session:
            versions = waiting_versions(session, limit=_PUBLISH_BATCH) if self.validation else []
            matches = session.execute(
                select(Match.id, Match.attempts)
                .where(claimable(utcnow()))  # not those backing off after a failure
                .order_by(*play_order())
                .limit(_PUBLISH_BATCH)
            ).all()
        # A job is known by its attempt too: a match put back in the queue (its lease ran
        # out, or its worker failed) is a new job, published at once; what is no longer
        # waiting is forgotten.
        jobs = [
            *((VALIDATE, validation_queue(self.kind), v, 0) for v in versions),
            *((PLAY_MATCH, match_queue(self.kind), m, n) for m, n in matches),
        ]
        waiting = {(task, job, n) for task, _, job, n in jobs}
        published = {key: t for key, t in self._published.items() if key in waiting}
        self._published = published
        for task, queue, job, n in jobs:
            if self._stop.is_set():
                return
            sent = published.get((task, job, n))
            if sent is not None and time.monotonic() - sent < self.republish_after:
                continue
            kind = VALIDATION_JOB if task == VALIDATE else MATCH_JOB
            self.app.send_task(
                task,
                args=[job, job_ticket(self.league.key, kind, job, n)],
                queue=queue,
                retry=True,
                retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
            )
            published[(task, job, n)] = time.monotonic()
            with self._lock:
                self._sent[task] += 1
            logger.debug("%s %d published", task, job, extra={"queue": queue})
