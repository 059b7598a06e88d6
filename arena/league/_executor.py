"""The local executor: slots on threads that validate versions and play queued matches.

Each slot loops: claim work in one short transaction (a version waiting for validation
first, ``claim_validation``; else the oldest queued match, ``claim_match``), do it with no
transaction open, then write what came of it in one more. A match is played from scratch
with :func:`~arena.match._runner.run_match`: every seat's bot started fresh in the sandbox (no
instance is kept between matches: the matches of a duplicate group share their decks and may
run at once, here or in another server), with the match row's secret seed. While it plays,
one heartbeat thread renews the leases of every match this executor holds; a lease it
finds lost (the match was requeued after a stall) cancels that match at its next decision.
Its replay and each seat's log go to the artifact store, and the result, its rating update
and its counts land in one transaction (``record_result``), which writes nothing if this
slot no longer holds the match. So a crash anywhere (SIGKILL included) loses nothing: the
match's lease runs out, ``requeue_expired`` puts it back, and it is played again.

Graceful stop (:meth:`LocalExecutor.stop`, SIGTERM): no new work is claimed; running
matches get ``grace`` seconds to finish and be recorded; those still running are then
cancelled and handed back to the queue by their lease holder (:func:`release_match`), and
validations still running have their lease ended, so another validator starts them again.

A match whose play fails by the arena's own fault (not a bot's: those are faults in its
result) goes back to the queue, to wait :func:`retry_after` its attempt before it is claimed
again (twice as long at each attempt); after :data:`MAX_ATTEMPTS` attempts it is finished as
void with the error, so that one broken match cannot occupy the slots for ever. A failure of
the host's own resources (no descriptor left, a full disk: :func:`host_fault`) says nothing
about the match: its attempt is given back and it waits :data:`HOST_RETRY_AFTER`, however
often it happens, so that a stranger who exhausts the server's descriptors cannot make the
league throw matches away (issue 24, finding 4).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import errno
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from arena.league._db import unit_of_work, utcnow
from arena.league._home import League
from arena.league._validation import validate_version
from arena.league.bots._bots import Bot, BotVersion, VersionStatus
from arena.league.bots._versions import PENDING, claim_validation, seat_manifest
from arena.league.matches._matches import (
    ClaimedMatch,
    Match,
    MatchSeat,
    MatchStatus,
    claim_match,
    next_queued,
    renew_lease,
)
from arena.league.matches._results import record_abandoned, record_result
from arena.league.matches._suspensions import void_result
from arena.match._hosts import BotHost
from arena.match._prestart import Prestarter
from arena.match._runner import MatchCancelled, MatchRecord, TimeControl, run_match
from arena.sandbox import Sandbox
from flipflop import BotManifest, MatchConfig

PRESTARTED_IDLE_S = 60.0
"""A prestarted instance no match took (another worker claimed its match) is stopped after
this long idle (it is paused after ``arena.match._hosts.PAUSE_S``)."""

__all__ = [
    "DEFAULT_LEASE",
    "HOST_RETRY_AFTER",
    "MAX_ATTEMPTS",
    "PRESTARTED_IDLE_S",
    "LocalExecutor",
    "end_validation_lease",
    "host_fault",
    "release_match",
    "retry_after",
]

logger = logging.getLogger(__name__)

DEFAULT_LEASE = dt.timedelta(seconds=60)
"""How long a slot holds a match (or a validation) between renewals. Renewed every third of
it, so a stall of two thirds of it, not one heartbeat, loses the match."""
MAX_ATTEMPTS = 5
"""Attempts after which a match the arena keeps failing to play is finished as void."""
RETRY_BASE = dt.timedelta(seconds=2)
"""How long a match waits after its first failed attempt; each further one doubles it."""
RETRY_MOST = dt.timedelta(minutes=5)
"""The longest a failed match waits before it may be claimed again."""
HOST_RETRY_AFTER = dt.timedelta(seconds=10)
"""How long a match waits after a failure of the host's own resources (its attempt back)."""
_HOST_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.ENOMEM, errno.EDQUOT})
_HOST_WORDS = tuple(os.strerror(n) for n in sorted(_HOST_ERRNOS))
_RENEWALS = 3
"""Heartbeats per lease."""
_CANCEL_WITHIN_S = 10.0
"""After the grace, how long cancelled matches get to stop before their leases are handed
back from the stopping thread."""
_WORKER_MAX = 100
"""The longest worker name (a lease owner is 128 characters; the slot's suffix is added)."""


def retry_after(attempt: int, base: dt.timedelta = RETRY_BASE) -> dt.timedelta:
    """How long a match whose ``attempt``-th attempt failed waits before it is claimed again.

    ``base`` after the first, twice as long after each further one, at most :data:`RETRY_MOST`.
    """
    wait: dt.timedelta = base * 2 ** max(0, min(attempt - 1, 20))
    return min(wait, RETRY_MOST)


def host_fault(error: BaseException) -> bool:
    """Whether ``error`` is the host's own resources running out, not the match's fault.

    No descriptor or memory left, a full disk or quota (``EMFILE``, ``ENFILE``, ``ENOMEM``,
    ``ENOSPC``, ``EDQUOT``), found on the error or anything it was raised from, or in its
    message (a gRPC or sandbox error that quotes the system's words).
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _HOST_ERRNOS:
            return True
        if any(words in str(current) for words in _HOST_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def release_match(
    session: Session,
    match_id: int,
    worker: str,
    *,
    wait: dt.timedelta | None = None,
    refund: bool = False,
    now: dt.datetime | None = None,
) -> bool:
    """Hand a running match ``worker`` holds back to the queue; False if it does not hold it.

    The graceful counterpart of a lease running out: one conditional ``UPDATE`` (as
    ``renew_lease``), so a match another worker holds, or one already finished, is left
    alone. ``attempts`` keeps counting the attempt that was given up, unless ``refund`` (the
    host failed, not the match). With ``wait``, nobody claims it before that much time has
    passed (a back-off: its ``lease_expires`` is then when it may be claimed again).
    """
    values: dict[str, Any] = {
        "status": MatchStatus.QUEUED,
        "lease_owner": None,
        "lease_expires": None if wait is None else (now or utcnow()) + wait,
    }
    if refund:
        values["attempts"] = Match.attempts - 1
    released = session.execute(
        update(Match)
        .where(
            Match.id == match_id,
            Match.status == MatchStatus.RUNNING,
            Match.lease_owner == worker,
        )
        .values(**values)
        .returning(Match.id)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    if released is not None:
        logger.debug("match %d released by %s", match_id, worker, extra={"match": match_id})
    return released is not None


def end_validation_lease(
    session: Session, version_id: int, worker: str, *, now: dt.datetime | None = None
) -> bool:
    """End ``worker``'s lease on a version it is validating, as if it had run out.

    ``claim_validation`` then hands the version to the next validator, which starts again
    from the first step. False if ``worker`` does not hold the version (or its validation
    has ended).
    """
    ended = session.execute(
        update(BotVersion)
        .where(
            BotVersion.id == version_id,
            BotVersion.lease_owner == worker,
            BotVersion.status.in_(PENDING),
        )
        .values(lease_expires=now or utcnow())
        .returning(BotVersion.id)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    return ended is not None


def default_worker() -> str:
    """A worker name unique to this process: ``HOST:PID:RANDOM``.

    A restarted server is a new worker: it never finishes, renews or releases a match its
    dead predecessor held; those come back through their leases running out.
    """
    host = socket.gethostname()[: _WORKER_MAX - 20]
    return f"{host}:{os.getpid()}:{os.urandom(2).hex()}"


@dataclass(frozen=True, slots=True)
class _Job:
    """What a slot is doing: a match (with its cancel switch) or a validation."""

    match: int | None = None
    version: int | None = None
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event)
    lost: threading.Event = dataclasses.field(default_factory=threading.Event)
    """Set by the heartbeat when the match's lease is gone: its result would count nowhere."""
    replay: Path | None = None
    """Where the match's replay is written as it is played (the live page reads it)."""


@dataclass
class _Slot:
    index: int
    owner: str
    """The lease owner of this slot's work: the worker's name and the slot's number."""
    job: _Job | None = None
    thread: threading.Thread | None = None
    unreleased: _Release | None = None
    """A match this slot failed to hand back (the database or the host failed too): it tries
    again before it claims anything else."""


@dataclass(frozen=True)
class _Release:
    """A hand-back to make: :func:`release_match`'s arguments."""

    match: int
    wait: dt.timedelta | None
    refund: bool


@dataclass
class _Tally:
    """What this executor did since it started (the ``_total`` metrics)."""

    matches: Counter[str] = dataclasses.field(default_factory=Counter)
    faults: Counter[str] = dataclasses.field(default_factory=Counter)
    validations: Counter[str] = dataclasses.field(default_factory=Counter)
    match_seconds: float = 0.0
    played: int = 0


class LocalExecutor:
    """Slots on threads of this process that validate versions and play matches.

    Args:
        league: the open league.
        sandbox: where every bot runs (the caller's: not closed here).
        slots: how many matches or validations run at once.
        worker: this executor's name, the prefix of its leases' owners (default: host,
            process id and a random part, :func:`default_worker`).
        lease: how long a match or validation is held between renewals.
        workdir: scratch space for sockets, replays and logs while a match runs; keep its
            path short (unix socket paths are limited to 107 bytes).
        config: the rules every match is played by; its ``seats`` is set from each match.
        clock: the bots' time limits.
        validation: validate versions (ahead of matches) as well as play matches.
        poll: how often an idle slot looks for work, in seconds (:meth:`wake` wakes it).
        retry_base: how long a match waits after its first failed attempt (doubling at
            each further one, :func:`retry_after`).
        host_retry_after: how long a match waits after a failure of the host's own
            resources (:func:`host_fault`).
        prestart: when a slot claims a match, start the bots of the next queued one, so
            that its starts are hidden behind play (``arena.match._prestart``). Instances
            are never kept after their match here: a prestarted one has seen no deal.

    Example::

        executor = LocalExecutor(league, sandbox, slots=4, workdir=Path("/tmp/ffa"))
        executor.start()
        ...
        executor.stop(grace=30)
    """

    def __init__(
        self,
        league: League,
        sandbox: Sandbox,
        *,
        slots: int,
        worker: str | None = None,
        lease: dt.timedelta = DEFAULT_LEASE,
        workdir: Path,
        config: MatchConfig | None = None,
        clock: TimeControl | None = None,
        validation: bool = True,
        poll: float = 1.0,
        retry_base: dt.timedelta = RETRY_BASE,
        host_retry_after: dt.timedelta = HOST_RETRY_AFTER,
        prestart: bool = True,
    ) -> None:
        if slots < 1:
            raise ValueError(f"an executor needs at least 1 slot, not {slots}")
        if lease.total_seconds() <= 0:
            raise ValueError(f"a lease must last some time, not {lease}")
        self.league = league
        self.sandbox = sandbox
        self.worker = (worker or default_worker())[:_WORKER_MAX]
        self.lease = lease
        self.workdir = workdir
        self.config = config or MatchConfig()
        self.clock = clock or TimeControl()
        self.validation = validation
        self.poll = poll
        self.retry_base = retry_base
        self.host_retry_after = host_retry_after
        self._slots = [_Slot(i, f"{self.worker}/{i}") for i in range(slots)]
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._tally = _Tally()
        self._started = False
        # Every match's seats start fresh (reuse=False: a duplicate group's other rotations
        # may be played here or elsewhere at once); the host only hands over prestarted ones.
        self._host = BotHost(sandbox, workdir / "pre", reuse=False, idle_s=PRESTARTED_IDLE_S)
        self._prestarter = (
            # Two tables of up to 5 seats (R-PLAYERS) per slot: the next queued match's, and
            # room for one prepared by another slot and not yet claimed.
            Prestarter(self._host, 2 * slots * 5, self.clock.notify_ms / 1000) if prestart else None
        )

    # ------------------------------------------------------------------ control

    def start(self) -> None:
        """Start the slots and the heartbeat.

        Raises:
            RuntimeError: it was started before.
        """
        if self._started:
            raise RuntimeError("this executor was started before: make a new one")
        self._started = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        for slot in self._slots:
            slot.thread = threading.Thread(
                target=self._run_slot, args=(slot,), name=f"slot-{slot.index}", daemon=True
            )
            slot.thread.start()
        self._heartbeat = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        self._heartbeat.start()
        logger.info(
            "executor %s started with %d slots",
            self.worker,
            len(self._slots),
            extra={"worker": self.worker, "slots": len(self._slots)},
        )

    def wake(self) -> None:
        """Tell idle slots that there may be work (new matches or versions)."""
        with self._work:
            self._work.notify_all()

    def stop(self, grace: float = 30.0) -> None:
        """Stop: claim nothing more, let running work finish within ``grace`` seconds.

        Matches still running after ``grace`` are cancelled and handed back to the queue;
        validations still running have their lease ended. Returns once every slot has
        stopped, or ``_CANCEL_WITHIN_S`` after the grace if a slot is stuck (its work has
        been handed back all the same: whatever it writes later counts nowhere).
        """
        if not self._started or self._stopped.is_set():
            return
        self._stopping.set()
        self.wake()
        logger.info("executor %s stopping (grace %g s)", self.worker, grace)
        deadline = time.monotonic() + max(0.0, grace)
        self._join(deadline)
        if self._busy():
            for slot in self._slots:
                job = slot.job
                if job is not None:
                    job.cancel.set()
            self._join(time.monotonic() + _CANCEL_WITHIN_S)
        self._hand_back()  # what stuck slots hold, and what a slot failed to hand back
        self._stopped.set()
        if self._prestarter is not None:
            self._prestarter.close(_CANCEL_WITHIN_S)
        self._host.close()  # the prestarted instances no match took
        shutil.rmtree(self._host.workdir, ignore_errors=True)
        if self._heartbeat is not None:
            self._heartbeat.join(_CANCEL_WITHIN_S)
        logger.info("executor %s stopped", self.worker, extra={"worker": self.worker})

    def status(self) -> dict[str, Any]:
        """What the executor is doing, for ``GET /api/v1/status`` and the metrics."""
        jobs = [slot.job for slot in self._slots]
        with self._lock:
            tally = dataclasses.replace(
                self._tally,
                matches=Counter(self._tally.matches),
                faults=Counter(self._tally.faults),
                validations=Counter(self._tally.validations),
            )
        return {
            "worker": self.worker,
            "slots": len(self._slots),
            "busy": sum(job is not None for job in jobs),
            "matches": sorted(j.match for j in jobs if j is not None and j.match is not None),
            "validations": sorted(
                j.version for j in jobs if j is not None and j.version is not None
            ),
            "stopping": self._stopping.is_set(),
            "played": dict(tally.matches),
            "faults": dict(tally.faults),
            "validated": dict(tally.validations),
            "match_seconds": round(tally.match_seconds, 3),
            "bot_starts": self._host.starts,
            "prestarted": 0 if self._prestarter is None else self._prestarter.started,
        }

    def live_replays(self) -> dict[int, Path]:
        """Where each match being played here writes its replay (``arena.web``'s live page)."""
        jobs = [slot.job for slot in self._slots]
        return {
            j.match: j.replay
            for j in jobs
            if j is not None and j.match is not None and j.replay is not None
        }

    # ------------------------------------------------------------------ slots

    def _run_slot(self, slot: _Slot) -> None:
        while not self._stopping.is_set():
            work: ClaimedMatch | int | None = None
            if slot.unreleased is None or self._release_again(slot):
                try:
                    work = self._claim(slot)
                except Exception:
                    logger.exception("slot %d could not claim work", slot.index)
            if work is None:
                with self._work:
                    if not self._stopping.is_set():
                        self._work.wait(self.poll)
                continue
            if isinstance(work, ClaimedMatch):
                self._play(slot, work)
            else:
                self._validate(slot, work)

    def _claim(self, slot: _Slot) -> ClaimedMatch | int | None:
        """A version to validate (its id), else a match, else None: one transaction."""
        with unit_of_work(self.league.sessions) as session:
            if self.validation:
                version = claim_validation(session, slot.owner, self.lease)
                if version is not None:
                    return version
            return claim_match(session, slot.owner, self.lease)

    def _validate(self, slot: _Slot, version_id: int) -> None:
        slot.job = _Job(version=version_id)
        outcome = "error"
        try:
            status = validate_version(
                self.league,
                version_id,
                worker=slot.owner,
                sandbox=self.sandbox,
                workdir=self.workdir / f"s{slot.index}",
                lease=self.lease,
                config=self.config,
                clock=self.clock,
            )
            outcome = _VALIDATION_OUTCOMES.get(status, "lost")
        except Exception:
            # Its lease runs out and another validator (or this one) starts it again.
            logger.exception("validating version %d failed", version_id)
        finally:
            slot.job = None
        with self._lock:
            self._tally.validations[outcome] += 1
        logger.info(
            "version %d validated: %s",
            version_id,
            outcome,
            extra={"version": version_id, "outcome": outcome},
        )

    def _play(self, slot: _Slot, claimed: ClaimedMatch) -> None:
        scratch = Path(tempfile.mkdtemp(dir=self.workdir, prefix=f"m{claimed.id}-"))
        job = _Job(match=claimed.id, replay=scratch / "replay.jsonl")
        slot.job = job
        try:
            outcome = self._play_match(slot, claimed, job, scratch)
        finally:
            slot.job = None
            shutil.rmtree(scratch, ignore_errors=True)
        with self._lock:
            self._tally.matches[outcome] += 1

    def _play_match(self, slot: _Slot, claimed: ClaimedMatch, job: _Job, scratch: Path) -> str:
        """Play a claimed match and record it; what came of it (a metric's label)."""
        fields = {"match": claimed.id, "attempt": claimed.attempt, "worker": slot.owner}
        logger.info("match %d claimed (attempt %d)", claimed.id, claimed.attempt, extra=fields)
        names: list[str] = []
        try:
            seed, bots = self._seats(claimed.id)
            names = [b.name for b in bots]
            record = run_match(
                f"m{claimed.id}",
                seed,
                bots,
                dataclasses.replace(self.config, seats=len(bots)),
                sandbox=self.sandbox,
                workdir=scratch / "w",
                host=self._host,
                deal=claimed.id,
                replay_path=scratch / "replay.jsonl",
                logs_dir=scratch / "logs",
                clock=self.clock,
                cancel=job.cancel,
                on_started=self._prestart_next,
            )
            replay = self.league.artifacts.put((scratch / "replay.jsonl").read_bytes())
            logs = _store_logs(self.league, record)
        except MatchCancelled:
            if job.lost.is_set():
                logger.warning("match %d: lease lost, given up", claimed.id, extra=fields)
                return "lost"
            self._release(slot, claimed.id)
            logger.info("match %d cancelled and requeued", claimed.id, extra=fields)
            return "released"
        except Exception as e:
            logger.exception("match %d failed by the arena's fault", claimed.id, extra=fields)
            self._fail(slot, claimed, names, f"{type(e).__name__}: {e}", host=host_fault(e))
            return "error"
        try:
            with unit_of_work(self.league.sessions) as session:
                counted = record_result(
                    session,
                    claimed.id,
                    slot.owner,
                    record,
                    replay_sha256=replay,
                    logs_sha256=logs,
                    fault_limits=self.league.config.faults,
                )
        except Exception as e:
            logger.exception("match %d: its result could not be recorded", claimed.id)
            if host_fault(e):
                self._release(slot, claimed.id, self.host_retry_after, refund=True)
            else:
                self._release(slot, claimed.id, retry_after(claimed.attempt, self.retry_base))
            return "error"
        if not counted:
            logger.warning("match %d: result discarded, the lease was lost", claimed.id)
            return "discarded"
        with self._lock:
            self._tally.played += 1
            self._tally.match_seconds += record.seconds
            self._tally.faults.update(f.kind.value for f in record.faults)
        outcome = "void" if record.void else "finished"
        logger.info(
            "match %d %s in %.2f s",
            claimed.id,
            outcome,
            record.seconds,
            extra={
                **fields,
                "outcome": outcome,
                "hands": record.hands,
                "faults": len(record.faults),
            },
        )
        return outcome

    def _seats(self, match_id: int) -> tuple[bytes, list[BotManifest]]:
        """The match's deal seed and the manifest each seat plays with, seat 0 first."""
        with unit_of_work(self.league.sessions) as session:
            seed = session.scalar(select(Match.seed).where(Match.id == match_id))
            rows = session.execute(
                select(Bot.name, BotVersion.number, BotVersion.source_sha256)
                .join(BotVersion, BotVersion.bot_id == Bot.id)
                .join(MatchSeat, MatchSeat.version_id == BotVersion.id)
                .where(MatchSeat.match_id == match_id)
                .order_by(MatchSeat.seat)
            ).all()
        if not seed:
            raise ValueError(f"match {match_id} has no deal seed")
        bots = [seat_manifest(self.league, bot, number, sha) for bot, number, sha in rows]
        return bytes.fromhex(seed), bots

    def _prestart_next(self) -> None:
        """Start the bots of the next queued matches (one per slot), while this slot plays.

        Called once this slot's match has its instances (so those are not counted as spare
        for the next). Never fails the match being played: a failure here only means no prestart.
        """
        if self._prestarter is None or self._stopping.is_set():
            return
        try:
            with unit_of_work(self.league.sessions) as session:
                upcoming = next_queued(session, len(self._slots))
            self._prestarter.prepare([(self._seats(m)[1], m) for m in upcoming])
        except Exception:
            logger.exception("prestarting the next matches' bots failed")

    def _release(
        self,
        slot: _Slot,
        match_id: int,
        wait: dt.timedelta | None = None,
        *,
        refund: bool = False,
    ) -> None:
        """Hand ``match_id`` back to the queue; on failure the slot tries again, and first.

        Left to its lease, a match this slot failed to hand back (the host out of
        descriptors: SQLite cannot open its file) would wait for the service's sweep
        (``requeue_expired``), without its back-off and with its attempt counted. The slot
        retries at each turn of its loop before claiming anything (:meth:`_release_again`).
        """
        slot.unreleased = _Release(match_id, wait, refund)
        self._release_again(slot)

    def _release_again(self, slot: _Slot) -> bool:
        """Make the slot's pending hand-back; True once made (or moot: not its match now)."""
        pending = slot.unreleased
        if pending is None:
            return True
        try:
            with unit_of_work(self.league.sessions) as session:
                release_match(
                    session, pending.match, slot.owner, wait=pending.wait, refund=pending.refund
                )
        except Exception:
            logger.exception(
                "match %d could not be released; the slot tries again before claiming more",
                pending.match,
            )
            return False
        slot.unreleased = None
        return True

    def _fail(
        self,
        slot: _Slot,
        claimed: ClaimedMatch,
        names: Sequence[str],
        error: str,
        *,
        host: bool = False,
    ) -> None:
        """A match the arena failed to play: back to the queue, or void after the last try.

        ``host``: the host's own resources failed (``host_fault``): the match is never
        abandoned for it, its attempt is given back and it waits ``host_retry_after``.
        """
        if host:
            logger.warning(
                "match %d: the host ran out of resources; retried in %s",
                claimed.id,
                self.host_retry_after,
                extra={"match": claimed.id},
            )
            self._release(slot, claimed.id, self.host_retry_after, refund=True)
            return
        if claimed.attempt < MAX_ATTEMPTS:
            self._release(slot, claimed.id, retry_after(claimed.attempt, self.retry_base))
            return
        result = abandoned_result(names, error, claimed.attempt)
        try:
            with unit_of_work(self.league.sessions) as session:
                record_abandoned(session, claimed.id, slot.owner, result)
            logger.error("match %d abandoned after %d attempts", claimed.id, claimed.attempt)
        except Exception:
            logger.exception("match %d could not be abandoned", claimed.id)

    # ------------------------------------------------------------------ leases

    def _beat(self) -> None:
        """Renew the lease of every match being played, every third of a lease."""
        interval = max(self.lease.total_seconds() / _RENEWALS, 0.05)
        while not self._stopped.wait(interval):
            jobs = [
                (slot.owner, job)
                for slot in self._slots
                if (job := slot.job) is not None and job.match is not None
            ]
            if not jobs:
                continue
            try:
                with unit_of_work(self.league.sessions) as session:
                    lost = [
                        job
                        for owner, job in jobs
                        if job.match is not None
                        and not renew_lease(session, job.match, owner, self.lease)
                    ]
            except Exception:  # the next beat tries again; the lease has two beats to spare
                logger.exception("renewing the leases of %d matches failed", len(jobs))
                continue
            for job in lost:
                if not job.cancel.is_set():
                    # Requeued after a stall (or just finished): stop playing it for nothing.
                    job.lost.set()
                    job.cancel.set()

    def _busy(self) -> bool:
        return any(s.thread is not None and s.thread.is_alive() for s in self._slots)

    def _join(self, deadline: float) -> None:
        for slot in self._slots:
            if slot.thread is not None:
                slot.thread.join(max(0.0, deadline - time.monotonic()))

    def _hand_back(self) -> None:
        """Hand back what stuck slots still hold, and the hand-backs that failed.

        Conditional (:func:`release_match`): safe if they finished or are another's now.
        """
        held = [(slot.owner, slot.job) for slot in self._slots if slot.job is not None]
        pending = [(slot.owner, r) for slot in self._slots if (r := slot.unreleased) is not None]
        if not held and not pending:
            return
        try:
            with unit_of_work(self.league.sessions) as session:
                for owner, job in held:
                    if job.match is not None:
                        release_match(session, job.match, owner)
                    elif job.version is not None:
                        end_validation_lease(session, job.version, owner)
                for owner, r in pending:
                    release_match(session, r.match, owner, wait=r.wait, refund=r.refund)
        except Exception:  # their leases run out instead
            logger.exception("handing back %d jobs failed", len(held) + len(pending))


_VALIDATION_OUTCOMES = {
    VersionStatus.ACTIVE: "passed",
    VersionStatus.RETIRED: "passed",
    VersionStatus.REJECTED: "failed",
    VersionStatus.UPLOADED: "error",
}
"""A validation's metric label by the version's status after it (others: "lost")."""


def _store_logs(league: League, record: MatchRecord) -> list[str | None]:
    """Each seat's output log into the artifact store: its digest, or None without one."""
    out: list[str | None] = []
    for seat in record.seats:
        path = Path(seat.log) if seat.log else None
        out.append(
            league.artifacts.put(path.read_bytes()) if path is not None and path.is_file() else None
        )
    return out


def abandoned_result(bots: Sequence[str], error: str, attempts: int) -> dict[str, Any]:
    """The stored result of a match the arena failed to play ``attempts`` times: void.

    The keys of a played match's result (empty), so that readers need no special case,
    and ``error``, the last failure.
    """
    return void_result(
        bots, f"the arena failed to play this match {attempts} times; the last error: {error}"
    )
