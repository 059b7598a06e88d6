"""The Celery fleet's side: the app, its one task, and how a worker plays a league match.

``arena worker`` runs a Celery worker (Redis broker) whose task ``arena.play_match`` names
a match by id and nothing more. The task body calls :meth:`FleetPlayer.play`, which talks to
the league over HTTP with the worker's token (``api/_worker_routes.py``): it claims the match, gets
its seed and each seat's source by content hash (fetched once, kept unpacked in the
worker's cache; Docker images are built from it, and kept, by the sandbox), plays it in this
machine's sandbox while renewing the lease, uploads the replay and the seats' logs, and
posts the result. The worker never touches the database.

Delivery: JSON messages only; ``acks_late`` with ``reject_on_worker_lost`` (a message is
acknowledged only when its task returns, so a worker that dies leaves it to the broker,
which hands it out again after ``visibility_timeout``), one message prefetched per slot.
Whatever copy of a message comes, the league's claim lets one worker play the match
(``_dispatch.py``).

Validations: ``arena.validate`` names a version waiting for validation; the worker claims
it, runs its steps (build, conformance check, a match against the house bots) in its own
sandbox with :func:`~arena.league._validation.run_validation`, and reports each step to the
league (:class:`_LeagueOverHttp`), which records it as a local validator would.

Queues, one pair per sandbox kind: ``validation.docker`` and ``matches.docker``,
``validation.process`` and ``matches.process``. A worker consumes only the pair of the
sandbox it offers, so it never gets a job it cannot run, and takes from its validation queue
first (the broker's queues are read in the worker's order, ``queue_order_strategy =
"priority"``): a new version is validated ahead of rated matches.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import ipaddress
import logging
import shutil
import ssl
import tempfile
import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from celery import Celery
from celery.worker.request import Request
from kombu.transport import virtual

from arena._errors import BrokerRefused, BrokerUnavailable
from arena._text import hide_password
from arena.client._pack import UploadLimits
from arena.league._executor import host_fault
from arena.league._validation import StepResult, ValidationTable, renewing, run_validation
from arena.league.bots._bots import StepKind, VersionStatus
from arena.league.bots._versions import cached_source
from arena.match._runner import MatchCancelled, TimeControl, run_match
from arena.sandbox import Sandbox
from flipflop import BotManifest, MatchConfig, read_manifest, to_jsonable

__all__ = [
    "PLAY_MATCH",
    "VALIDATE",
    "VISIBILITY_TIMEOUT",
    "WORKER_PREFIX",
    "FleetApp",
    "FleetPlayer",
    "WorkerRefused",
    "check_broker",
    "fleet_app",
    "match_queue",
    "validation_queue",
    "worker_queues",
]

logger = logging.getLogger(__name__)

PLAY_MATCH = "arena.play_match"
"""The task that plays one league match: its only argument is the match's id."""
VALIDATE = "arena.validate"
"""The task that validates one submitted version: its only argument is the version's id."""
WORKER_PREFIX = "/api/v1/worker"
"""Where the league's routes for workers are (``api/_worker_routes.py``)."""
VISIBILITY_TIMEOUT = 6 * 3600
"""Seconds before Redis hands an unacknowledged message to another worker: longer than the
longest match, so that a match still being played is never delivered twice (a second copy
would find the match claimed, but would hold a slot while it asks)."""
_RENEWALS = 3
"""Lease renewals per lease."""


class WorkerRefused(Exception):
    """The league refused this worker's token (401 or 403): it cannot play anything."""


class FleetApp(Celery):  # type: ignore[misc]  # celery has no type information
    """The fleet's Celery app; in a worker, :attr:`player` plays the tasks."""

    player: FleetPlayer | None = None


def ack_freeing_its_slot(message: Any, connection_errors: tuple[type[BaseException], ...]) -> bool:
    """Acknowledge a delivered ``message``; where the broker is gone, free its slot anyway.

    kombu's Redis transport counts a message against the prefetch limit until its ack has
    reached Redis: an ack that fails (Redis restarted while the match played) leaves it
    counted for ever, and a worker of one slot, whose only slot it holds, never takes another
    message (it waited 180 s and more, in ``test_a_broker_restart_mid_league_loses_nothing``).
    A restarted Redis has lost that message anyway, and the league publishes what was not
    played again: so the message is dropped from the count, as an ack would have.

    Returns:
        Whether the broker heard the ack.
    """
    try:
        message.ack()
    except connection_errors as e:
        qos = getattr(message.channel, "qos", None)
        if isinstance(qos, virtual.QoS):
            base: Any = virtual.QoS  # kombu has no type information here
            base.ack(qos, message.delivery_tag)  # the count only: Redis is not there
        logger.warning(
            "the broker did not hear the ack of a message (%s); its slot takes the next one",
            e,
            extra={"delivery_tag": str(message.delivery_tag)},
        )
        return False
    return True


class FleetRequest(Request):  # type: ignore[misc]  # celery has no type information
    """A task request whose ack frees its prefetch slot even when the broker is gone."""

    acknowledged: bool = False

    def acknowledge(self) -> None:
        """Acknowledge the task's message (:func:`ack_freeing_its_slot`)."""
        if not self.acknowledged:
            ack_freeing_its_slot(self.message, self._connection_errors)
            self.acknowledged = True


def match_queue(sandbox_kind: str) -> str:
    """The queue of the matches to be played in sandboxes of ``sandbox_kind``."""
    return f"matches.{sandbox_kind}"


def validation_queue(sandbox_kind: str) -> str:
    """The queue of the versions to be validated in sandboxes of ``sandbox_kind``."""
    return f"validation.{sandbox_kind}"


def worker_queues(sandbox_kind: str, *, ladder: bool = False) -> list[str]:
    """The queues a worker with sandboxes of ``sandbox_kind`` consumes, first first.

    A ladder's worker (``arena run --executor celery``) consumes the ladder's queue alone.
    """
    if ladder:
        return [f"ladder.{sandbox_kind}"]
    return [validation_queue(sandbox_kind), match_queue(sandbox_kind)]


def check_broker(broker: str, *, insecure: bool = False) -> None:
    """Refuse a broker URL that anyone who reaches the broker could use (issue 24, finding 9).

    Whoever reaches a Redis without a password lists the workers, reads every message and can
    stop the fleet, so a broker URL must carry a password (``redis://:PASSWORD@HOST:6379/0``,
    or ``USER:PASSWORD@`` for a Redis ACL user), unless the broker is on this machine's
    loopback, or ``insecure`` (``--insecure-broker``) says the network is the operator's own.
    ``rediss://`` (Redis over TLS) is accepted as ``redis://`` is.

    Raises:
        BrokerRefused: not a Redis URL, or no password for a broker on another machine.
    """
    parts = urlsplit(broker)
    if parts.scheme not in ("redis", "rediss"):
        raise BrokerRefused(
            "the fleet's broker is Redis: redis://HOST:PORT/N or rediss://"
            f" (got {hide_password(broker)})"
        )
    host = parts.hostname or "localhost"
    if parts.password or insecure or _loopback(host):
        return
    raise BrokerRefused(
        f"the broker {hide_password(broker)} has no password: anyone who reaches it could read"
        " the fleet's messages and stop its workers; give it one (redis://:PASSWORD@HOST:PORT/N,"
        " docs/deploy.md), or say --insecure-broker on a network of your own"
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def fleet_app(broker: str) -> FleetApp:
    """The Celery app of a fleet on ``broker`` (``redis://HOST:PORT/N``), with its task.

    Workers take no remote control commands (``celery control``, ``broadcast("shutdown")``):
    the broker delivers work, nothing more. A ``rediss://`` URL without ``ssl_cert_reqs``
    verifies the broker's certificate.
    """
    app = FleetApp("arena", broker=broker, set_as_current=False)
    if urlsplit(broker).scheme == "rediss" and "ssl_cert_reqs" not in urlsplit(broker).query:
        app.conf.broker_use_ssl = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": VISIBILITY_TIMEOUT,
            # The queues in the worker's order, never rotated: validations first.
            "queue_order_strategy": "priority",
        },
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        # No remote control: whoever reaches the broker could stop every worker with one
        # broadcast (issue 24, finding 9).
        worker_enable_remote_control=False,
        task_default_queue=match_queue("docker"),
    )

    @app.task(  # type: ignore[untyped-decorator]
        name=PLAY_MATCH, bind=True, acks_late=True, reject_on_worker_lost=True, Request=FleetRequest
    )
    def play_match(task: Any, match_id: int, ticket: str = "") -> str:
        return _player(task).play(int(match_id), str(ticket))

    @app.task(  # type: ignore[untyped-decorator]
        name=VALIDATE, bind=True, acks_late=True, reject_on_worker_lost=True, Request=FleetRequest
    )
    def validate(task: Any, version_id: int, ticket: str = "") -> str:
        return _player(task).validate(int(version_id), str(ticket))

    return app


def reach_broker(app: Celery, broker: str, *, timeout: float = 10.0) -> None:
    """Connect to ``app``'s broker once, or raise :class:`BrokerUnavailable` saying why.

    For who starts publishing and has nobody watching logs (``arena run --executor
    celery``): Celery would otherwise retry in silence for ever.
    """
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=2, interval_start=0.5, timeout=timeout)
    except Exception as e:
        raise BrokerUnavailable(
            f"cannot reach the fleet's broker at {hide_password(broker)}: {e}"
        ) from e


def _player(task: Any) -> FleetPlayer:
    """The player of the worker process a task runs in."""
    player: FleetPlayer | None = task.app.player
    if player is None:
        raise RuntimeError("this process is no arena worker: it has no FleetPlayer")
    return player


class FleetPlayer:
    """Plays league matches on this machine for the league at ``url``.

    Args:
        url: the league's base URL (``http://league:8000``).
        token: this worker's token (``arena league worker add NAME``).
        sandbox: where the bots run (the caller's: not closed here).
        workdir: scratch space for sockets, replays and logs (keep its path short).
        cache: where bots' sources are kept, unpacked, by content hash.
        timeout: seconds an HTTP call to the league may take.
    """

    def __init__(
        self,
        url: str,
        token: str,
        sandbox: Sandbox,
        *,
        workdir: Path,
        cache: Path,
        timeout: float = 60.0,
    ) -> None:
        self.sandbox = sandbox
        self.workdir = workdir
        self.cache = cache
        self.limits = UploadLimits()
        """What sources are unpacked with: the league's limits once :meth:`hello` heard them."""
        self.http = httpx.Client(
            base_url=url.rstrip("/") + WORKER_PREFIX,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()

    def hello(self) -> dict[str, Any]:
        """Ask the league who this worker is: its ``worker`` name, and ``kind``.

        ``kind`` is ``ladder`` when the URL is an ``arena run --executor celery`` ladder's
        (whose matches are on its own queue, ``arena.ladder._fleet_ladder``), else a league's. The
        league's upload limits (``uploads``) become this player's :attr:`limits`, so that a
        source the league accepted under limits wider than the defaults unpacks here too.

        Raises:
            WorkerRefused: the league refuses the token.
            httpx.HTTPError: the league cannot be reached.
        """
        response = self.http.get("/me")
        self._refused(response)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        if "uploads" in answer:
            self.limits = UploadLimits(**answer["uploads"])
        return answer

    def play(self, match_id: int, ticket: str = "") -> str:
        """Claim, play and report the match ``match_id``; what came of it.

        ``ticket`` is the one the task's message carried: the league's proof that the match
        was published (a ladder's matches need none).

        ``taken`` (not queued any more: played, or being played, elsewhere), ``finished``,
        ``void``, ``discarded`` (the lease was lost before the result was counted), ``lost``
        (the lease was lost while playing), ``error`` (handed back to the league as a
        failure of the arena's).
        """
        plan = self._claim(f"/matches/{match_id}/claim", ticket)
        if plan is None:
            return "taken"
        scratch = Path(tempfile.mkdtemp(dir=self.workdir, prefix=f"m{match_id}-"))
        try:
            return self._play(plan, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def validate(self, version_id: int, ticket: str = "") -> str:
        """Claim and validate the version ``version_id``; its status afterwards.

        ``taken`` when it is not waiting for validation (validated, or being validated,
        elsewhere). ``ticket`` is as :meth:`play`'s.
        """
        job = self._claim(f"/versions/{version_id}/claim", ticket)
        if job is None:
            return "taken"
        ledger = _LeagueOverHttp(self, version_id, str(job["claim"]), float(job["lease_s"]))
        status = run_validation(
            ledger,
            self.sandbox,
            self.workdir,
            bot=str(job["bot"]),
            number=int(job["number"]),
            sha256=str(job["sha256"]),
            manifest=lambda: self._manifest(job, str(job["claim"])),
            table=ValidationTable.from_json(job["table"]),
        )
        logger.info("version %d validated: %s", version_id, status.value)
        return status.value

    def _play(self, plan: dict[str, Any], scratch: Path) -> str:
        match_id, claim = int(plan["match"]), str(plan["claim"])
        cancel, lost = threading.Event(), threading.Event()
        lease = dt.timedelta(seconds=float(plan["lease_s"]))
        beat = threading.Thread(
            target=self._renew,
            args=(match_id, claim, lease, cancel, lost),
            name=f"lease-m{match_id}",
            daemon=True,
        )
        beat.start()
        try:
            bots = [self._manifest(seat, claim) for seat in plan["seats"]]
            record = run_match(
                str(plan.get("name") or f"m{match_id}"),
                bytes.fromhex(plan["seed"]),
                bots,
                MatchConfig(**plan["config"]),
                sandbox=self.sandbox,
                workdir=scratch / "w",
                replay_path=scratch / "replay.jsonl",
                logs_dir=scratch / "logs",
                clock=TimeControl(**plan["clock"]),
                cancel=cancel,
            )
            replay = self._upload((scratch / "replay.jsonl").read_bytes(), claim)
            logs = [
                self._upload(Path(seat.log).read_bytes(), claim)
                if seat.log and Path(seat.log).is_file()
                else None
                for seat in record.seats
            ]
        except MatchCancelled:
            logger.warning("match %d: lease lost, given up", match_id)
            return "lost"
        except Exception as e:
            logger.exception("match %d failed by the arena's fault", match_id)
            self.post(
                f"/matches/{match_id}/fail",
                claim,
                error=f"{type(e).__name__}: {e}",
                host=host_fault(e),
            )
            return "error"
        finally:
            cancel.set()
            beat.join()
        response = self.post(
            f"/matches/{match_id}/result",
            claim,
            record=to_jsonable(record),
            replay_sha256=replay,
            logs_sha256=logs,
        )
        if response.status_code == 409:
            logger.warning("match %d: %s", match_id, response.json()["error"])
            return "discarded"
        response.raise_for_status()
        outcome = "void" if record.void else "finished"
        logger.info("match %d %s in %.2f s", match_id, outcome, record.seconds)
        return outcome

    def _claim(self, path: str, ticket: str) -> dict[str, Any] | None:
        """Claim a job at ``path`` with its ticket: what it needs; None if it is taken."""
        response = self.http.post(path, json={"ticket": ticket})
        self._refused(response)
        if response.status_code in (404, 409):
            logger.info("%s: %s", path, response.json()["error"])
            return None
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    def _manifest(self, seat: dict[str, Any], claim: str) -> BotManifest:
        """A seat's manifest, its source fetched (for the job ``claim`` holds) once."""
        sha256 = str(seat["sha256"])

        def fetch() -> bytes:
            response = self.http.get(f"/sources/{sha256}", params={"claim": claim})
            self._refused(response)
            response.raise_for_status()
            return response.content

        source = cached_source(self.cache, sha256, fetch, self.limits)
        return dataclasses.replace(read_manifest(source), name=str(seat["name"]))

    def _upload(self, data: bytes, claim: str) -> str:
        """Put ``data`` in the league's artifact store, for the job ``claim`` holds; its digest."""
        digest = hashlib.sha256(data).hexdigest()
        response = self.http.put(
            f"/artifacts/{digest}",
            params={"claim": claim},
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        self._refused(response)
        response.raise_for_status()
        return digest

    def post(self, path: str, claim: str, **body: Any) -> httpx.Response:
        """POST ``body`` and the ``claim`` to the league's worker route ``path``.

        Raises:
            WorkerRefused: the league refuses the token.
        """
        response = self.http.post(path, json={"claim": claim, **body})
        self._refused(response)
        return response

    def _renew(
        self,
        match_id: int,
        claim: str,
        lease: dt.timedelta,
        cancel: threading.Event,
        lost: threading.Event,
    ) -> None:
        """Renew the lease every third of it until ``cancel``; a lost lease cancels the match."""
        interval = max(lease.total_seconds() / _RENEWALS, 0.05)
        while not cancel.wait(interval):
            try:
                response = self.post(f"/matches/{match_id}/lease", claim)
            except (httpx.HTTPError, WorkerRefused):  # the next beat tries again
                logger.exception("renewing the lease of match %d failed", match_id)
                continue
            if response.status_code == 409:
                lost.set()
                cancel.set()
                return

    @staticmethod
    def _refused(response: httpx.Response) -> None:
        if response.status_code in (401, 403):
            raise WorkerRefused(f"the league refused this worker: {response.text}")


class _LeagueOverHttp:
    """A validation's :class:`~arena.league._validation.Ledger` that is the league's, over HTTP."""

    def __init__(self, player: FleetPlayer, version_id: int, claim: str, lease_s: float) -> None:
        self.player = player
        self.path = f"/versions/{version_id}"
        self.claim = claim
        self.lease_s = lease_s
        self.last_status = VersionStatus.UPLOADED

    def start_step(self, kind: StepKind) -> bool:
        response = self.player.post(f"{self.path}/steps/{kind.value}/start", self.claim)
        if response.status_code == 409:
            return False
        response.raise_for_status()
        return True

    def end_step(self, kind: StepKind, result: StepResult, *, last: bool) -> VersionStatus | None:
        replay = self.player._upload(result.replay, self.claim) if result.replay else None
        response = self.player.post(
            f"{self.path}/steps/{kind.value}/end",
            self.claim,
            outcome=result.outcome.value,
            detail=result.detail,
            log=result.log,
            last=last,
            replay_sha256=replay,
        )
        if response.status_code == 409:
            return None
        response.raise_for_status()
        self.last_status = VersionStatus(response.json()["status"])
        return self.last_status

    def renewing(self) -> AbstractContextManager[None]:
        return renewing(self._renew, dt.timedelta(seconds=self.lease_s), f"lease{self.path}")

    def _renew(self) -> bool:
        """Renew the lease once; False when it is lost (the step's end will be refused)."""
        try:
            response = self.player.post(f"{self.path}/lease", self.claim)
        except WorkerRefused:
            return False
        return response.status_code != 409

    def status(self) -> VersionStatus:
        # The worker cannot read another validator's status; it reports what it last knew.
        return self.last_status
