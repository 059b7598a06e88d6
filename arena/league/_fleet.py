"""The league's side of a fleet worker: how a worker plays a league match or validates a version.

``arena worker`` runs a Celery worker (``arena.executors._celery``) whose tasks call a
:class:`FleetPlayer`. It talks to the league (or an ``arena run --executor celery`` ladder)
over HTTP with the worker's token (``arena.executors._protocol``; the league's routes are
``api/_worker_routes.py``): it claims the match, gets its seed and each seat's source by
content hash (fetched once, kept unpacked in the worker's cache; Docker images are built from
it, and kept, by the sandbox), plays it in this machine's sandbox while renewing the lease,
uploads the replay and the seats' logs, and posts the result. The worker never touches the
database.

**Starts hidden behind play.** With ``ahead``, a claim asks the league for the next match too
(``arena.league._dispatch``, "One match ahead"): while the first plays, this player starts the
second's bots (:class:`~arena.match._prestart.Prestarter`, on a host that keeps no instance
after its match), renews both leases, and plays the second in the same task. A worker told to
stop (:meth:`FleetPlayer.drain`) hands the second back instead of playing it.

Validations: the task ``arena.validate`` names a version waiting for validation; the worker
claims it, runs its steps (build, conformance check, a match against the house bots) in its
own sandbox with :func:`~arena.league._validation.run_validation`, and reports each step to
the league (:class:`_LeagueOverHttp`), which records it as a local validator would.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx

from arena.client._pack import UploadLimits
from arena.executors._protocol import WORKER_PREFIX, artifact_parts
from arena.league._executor import PRESTARTED_IDLE_S, host_fault
from arena.league._validation import StepResult, ValidationTable, renewing, run_validation
from arena.league.bots._bots import StepKind, VersionStatus
from arena.league.bots._versions import cached_source
from arena.match._hosts import BotHost
from arena.match._prestart import Prestarter
from arena.match._runner import MatchCancelled, TimeControl, run_match
from arena.sandbox import Sandbox
from flipflop import BotManifest, MatchConfig, read_manifest, to_jsonable

__all__ = ["FleetPlayer", "WorkerRefused"]

logger = logging.getLogger(__name__)

_RENEWALS = 3
"""Lease renewals per lease."""
_CLOSE_WITHIN_S = 10.0
"""How long :meth:`FleetPlayer.close` waits for the starts in flight."""


class WorkerRefused(Exception):
    """The league refused this worker's token (401 or 403): it cannot play anything."""


class FleetPlayer:
    """Plays league matches on this machine for the league at ``url``.

    Args:
        url: the league's base URL (``http://league:8000``).
        token: this worker's token (``arena league worker add NAME``).
        sandbox: where the bots run (the caller's: not closed here).
        workdir: scratch space for sockets, replays and logs (keep its path short).
        cache: where bots' sources are kept, unpacked, by content hash.
        timeout: seconds an HTTP call to the league may take.
        ahead: claim the next match with each one and start its bots while the first plays
            (the module's "Starts hidden behind play").
        slots: the matches this worker plays at once (bounds the instances prestarted).
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
        ahead: bool = False,
        slots: int = 1,
    ) -> None:
        self.sandbox = sandbox
        self.ahead = ahead
        self.slots = slots
        self.workdir = workdir
        self.cache = cache
        self.limits = UploadLimits()
        """What sources are unpacked with: the league's limits once :meth:`hello` heard them."""
        self.http = httpx.Client(
            base_url=url.rstrip("/") + WORKER_PREFIX,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
        # Every match's seats start fresh (a duplicate group's other rotations may be played
        # elsewhere at once): the host only hands over the instances prestarted for a match.
        self._host = BotHost(sandbox, workdir / "pre", reuse=False, idle_s=PRESTARTED_IDLE_S)
        self._prestarter: Prestarter | None = None
        self._lock = threading.Lock()
        self._draining = threading.Event()

    def drain(self) -> None:
        """The worker is stopping: claim nothing ahead, and hand back what was claimed ahead."""
        self._draining.set()

    def close(self) -> None:
        """Stop the prestarted instances no match took; close the HTTP connections."""
        with self._lock:
            prestarter, self._prestarter = self._prestarter, None
        if prestarter is not None:
            prestarter.close(_CLOSE_WITHIN_S)
        self._host.close()
        self.http.close()

    @property
    def starts(self) -> int:
        """Bot instances started for the matches played with ``ahead``, prestarted included."""
        return self._host.starts

    @property
    def prestarted(self) -> int:
        """Instances started for a match claimed ahead, before it began."""
        return 0 if self._prestarter is None else self._prestarter.started

    def hello(self) -> dict[str, Any]:
        """Ask the league who this worker is: its ``worker`` name, and ``kind``.

        ``kind`` is ``ladder`` when the URL is an ``arena run --executor celery`` ladder's
        (whose matches are on its own queue, ``arena.executors._fleet_pool``), else a league's. The
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

        With :attr:`ahead`, the match the league claimed with this one is played next in
        this call (what came of it is logged), or handed back if the worker is draining.
        """
        ahead = self.ahead and not self._draining.is_set()
        plan = self._claim(f"/matches/{match_id}/claim", ticket, ahead=ahead)
        if plan is None:
            return "taken"
        follow: dict[str, Any] | None = plan.pop("next", None)
        then: _Lease | None = None
        prestarting: list[threading.Thread] = []
        try:
            on_started = None
            if follow is not None:
                then = _Lease(self, follow)  # held, and renewed, from its claim on
                on_started = functools.partial(self._prestart, follow, prestarting)
            outcome = self._play(plan, _Lease(self, plan), on_started)
        except BaseException:
            if follow is not None and then is not None:
                self._hand_back(follow, then)
            raise
        if follow is None or then is None:
            return outcome
        if self._draining.is_set():
            self._hand_back(follow, then)
            return outcome
        for thread in prestarting:  # its bots asked for: none of them is started twice
            thread.join()
        logger.info("match %d, claimed ahead, is next", int(follow["match"]))
        self._play(follow, then, None)
        return outcome

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

    def _hand_back(self, plan: dict[str, Any], lease: _Lease) -> None:
        """Give back a match claimed ahead and not begun: queued again, its attempt refunded."""
        lease.stop()
        match_id = int(plan["match"])
        try:
            response = self.post(f"/matches/{match_id}/release", str(plan["claim"]))
            response.raise_for_status()
            logger.info("match %d, claimed ahead, handed back", match_id)
        except Exception:  # its lease runs out instead
            logger.exception("match %d, claimed ahead, could not be handed back", match_id)

    def _prestart(self, plan: dict[str, Any], threads: list[threading.Thread]) -> None:
        """Start the bots of the match claimed ahead, from a thread: never delays this match.

        The thread (added to ``threads``) fetches the sources and asks for the starts; the
        match claimed ahead waits for it before it begins, so that it takes what was asked for.
        """

        def start() -> None:
            try:
                bots = [self._manifest(seat, str(plan["claim"])) for seat in plan["seats"]]
                with self._lock:
                    if self._prestarter is None:
                        notice_s = TimeControl(**plan["clock"]).notify_ms / 1000
                        # Up to 5 seats (R-PLAYERS) of the match ahead of each slot, and as
                        # many again for one whose slot has not taken them yet.
                        self._prestarter = Prestarter(self._host, 2 * self.slots * 5, notice_s)
                    prestarter = self._prestarter
                prestarter.prepare([(bots, int(plan["match"]))])
            except Exception:
                logger.exception("prestarting the bots of match %d failed", int(plan["match"]))

        thread = threading.Thread(target=start, name=f"prestart-m{plan['match']}", daemon=True)
        thread.start()
        threads.append(thread)

    def _play(
        self, plan: dict[str, Any], lease: _Lease, on_started: Callable[[], object] | None
    ) -> str:
        """Play the match ``plan`` names, which ``lease`` holds; report it; what came of it."""
        match_id = int(plan["match"])
        scratch = Path(tempfile.mkdtemp(dir=self.workdir, prefix=f"m{match_id}-"))
        try:
            return self._play_in(plan, lease, on_started, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _play_in(
        self,
        plan: dict[str, Any],
        lease: _Lease,
        on_started: Callable[[], object] | None,
        scratch: Path,
    ) -> str:
        match_id, claim = int(plan["match"]), str(plan["claim"])
        cancel = lease.cancel
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
                host=self._host if self.ahead else None,
                deal=match_id,
                on_started=on_started,
            )
            replay, *logs = self._upload_all(
                [
                    (scratch / "replay.jsonl").read_bytes(),
                    *(
                        Path(seat.log).read_bytes()
                        if seat.log and Path(seat.log).is_file()
                        else None
                        for seat in record.seats
                    ),
                ],
                claim,
            )
            assert replay is not None
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
            lease.stop()
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

    def _claim(self, path: str, ticket: str, *, ahead: bool = False) -> dict[str, Any] | None:
        """Claim a job at ``path`` with its ticket: what it needs; None if it is taken.

        ``ahead``: ask for the next match too (a match's claim only).
        """
        response = self.http.post(
            path, json={"ticket": ticket, **({"ahead": True} if ahead else {})}
        )
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

    def _upload_all(self, datas: list[bytes | None], claim: str) -> list[str | None]:
        """Put ``datas`` in the league's artifact store in one request; their digests.

        None stays None (a seat without a log). A match's replay and logs went up one request
        each, about 9 ms apiece on the league: most of a slot's time between two matches
        (``benchmarks/scale.py``). A league that has no such route (404, 405: an earlier
        version) gets them one by one.
        """
        present = [d for d in datas if d is not None]
        response = self.http.put(
            "/artifacts",
            params={"claim": claim, "part": artifact_parts(present)},
            content=b"".join(present),
            headers={"Content-Type": "application/octet-stream"},
        )
        self._refused(response)
        if response.status_code in (404, 405):
            digests = iter([self._upload(d, claim) for d in present])
        else:
            response.raise_for_status()
            digests = iter(hashlib.sha256(d).hexdigest() for d in present)
        return [None if d is None else next(digests) for d in datas]

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


class _Lease:
    """The lease of one claimed match, renewed in a thread from now until :meth:`stop`.

    ``cancel`` is set when the lease is lost (the match is then cancelled, or never begun)
    or stopped; ``lost`` only when the league said the claim holds the match no more.
    """

    def __init__(self, player: FleetPlayer, plan: dict[str, Any]) -> None:
        match_id = int(plan["match"])
        self.cancel, self.lost = threading.Event(), threading.Event()
        self._beat = threading.Thread(
            target=player._renew,
            args=(
                match_id,
                str(plan["claim"]),
                dt.timedelta(seconds=float(plan["lease_s"])),
                self.cancel,
                self.lost,
            ),
            name=f"lease-m{match_id}",
            daemon=True,
        )
        self._beat.start()

    def stop(self) -> None:
        """Renew no more (the match ended, or is handed back)."""
        self.cancel.set()
        self._beat.join()


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
