"""The league's HTTP routes for its fleet's workers, under ``/api/v1/worker/``.

Every route takes a *worker* token (``Authorization: Bearer ffw_…``, ``arena league worker
add NAME``) and nothing else: anonymous callers, users and admins alike get 401, and a
worker's token opens no user's route (``_routes.py`` skips these paths when it reads a user's
token). The routes are thin; the use cases are in ``_dispatch.py``:

- ``GET /me``: the worker's name (a worker checks its token when it starts);
- ``GET /sources/{sha256}?claim=C``: a bot version's source archive, by content hash, for a
  match or validation the claim ``C`` holds only;
- ``POST /matches/{id}/claim``: claim a queued match with the ticket its message carried
  (``{"ticket": …}``); its seed, seats, rules and clock;
- ``POST /matches/{id}/lease``: renew the claim's lease (409: lost, stop playing);
- ``PUT /artifacts?claim=C&part=SHA256:SIZE&…``: a match's replay and its seats' logs in one
  body, each stored under its hash, for a job the claim holds, within
  :data:`MAX_JOB_ARTIFACTS` and :data:`MAX_JOB_ARTIFACT_BYTES` (all or none of them);
  ``PUT /artifacts/{sha256}?claim=C``: one (an earlier worker's upload);
- ``POST /matches/{id}/result``: the result, checked against its replay by the league's
  referee, then counted once (409: not held, not counted; 400: the engine disagrees);
- ``POST /matches/{id}/fail``: a failure of the arena's: requeued, or void at the last try;
- ``POST /versions/{id}/claim``: claim a version waiting for validation, with its ticket:
  its source's hash and its validation match's table;
- ``POST /versions/{id}/lease``: renew the claim's validation lease;
- ``POST /versions/{id}/steps/{step}/start`` and ``…/end``: a validation step's progress,
  written as a local validator writes it (409: the claim holds the version no more); a
  passed match step names its uploaded replay, which the referee checks.

A worker is trusted to play, not to judge (issue 24, finding 5; ``_dispatch.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from arena._errors import Conflict, LeagueError, NotAuthenticated, NotFound
from arena.executors._http import bearer_token, read_upload
from arena.executors._protocol import (
    WORKER_PREFIX,
    Claimed,
    Failure,
    Result,
    announced,
    split_artifacts,
)
from arena.league._artifacts import check_digest
from arena.league._db import read_only, unit_of_work
from arena.league._dispatch import (
    FleetRules,
    claim_for_worker,
    claim_version_for_worker,
    end_step_for_worker,
    fail_for_worker,
    holds_job,
    may_fetch_source,
    record_for_worker,
    release_for_worker,
    renew_for_worker,
    renew_validation_for_worker,
    start_step_for_worker,
    validation_ledger,
)
from arena.league._home import League
from arena.league._validation import StepResult
from arena.league.accounts._workers import authenticate_worker
from arena.league.api._gate import WORKER_STATE
from arena.league.bots._bots import StepKind, StepOutcome

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_JOB_ARTIFACTS",
    "MAX_JOB_ARTIFACT_BYTES",
    "WORKER_PREFIX",
    "add_worker_routes",
    "worker_of",
]

MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
"""The largest replay or log a worker may upload."""
MAX_JOB_ARTIFACTS = 1
"""Artifacts a job may store beyond one per seat (a match: its replay; a validation: its
match's replay): a worker stores what its job makes, not whatever bytes it likes."""
MAX_JOB_ARTIFACT_BYTES = 64 * 1024 * 1024
"""The most bytes all the artifacts of one job may add to the store."""
_QUOTAS_KEPT = 10_000
"""Jobs whose artifact counts are remembered (the oldest are forgotten first)."""


_NO_TOKEN = "this needs a worker token (Authorization: Bearer ffw_…)"


def worker_of(league: League, authorization: str | None) -> str:
    """The name of the worker whose token the ``Authorization`` header ``authorization`` holds.

    The API's gate (``_gate.py``) calls it for every path under :data:`WORKER_PREFIX`
    before any byte of the body is read: FastAPI parses a JSON body before it runs a route's
    dependencies, which would hold a stranger's whole body before refusing them.

    Raises:
        NotAuthenticated: no token, or not a valid worker token.
        Forbidden: the worker is disabled.
    """
    token = bearer_token(authorization, "invalid worker token")
    if token is None:
        raise NotAuthenticated(_NO_TOKEN)
    with unit_of_work(league.sessions) as session:
        return authenticate_worker(session, league.key, token)


def _worker(request: Request) -> str:
    """The name of the worker whose token the request carries, as the gate found it."""
    name = getattr(request.state, WORKER_STATE, None)
    if not isinstance(name, str):  # an application without the gate: refuse, never trust
        raise NotAuthenticated(_NO_TOKEN)
    return name


WorkerName = Annotated[str, Depends(_worker)]


class Ticket(BaseModel):
    """A claim's proof that the job was published to the claimant: its message's ticket."""

    ticket: str = ""
    ahead: bool = False
    """Claim the next queued match too, to start its bots while this one plays."""


class StepEnd(Claimed):
    """How a validation step ended, on the worker (a passed match step names its replay)."""

    outcome: StepOutcome
    detail: str
    log: str
    last: bool
    replay_sha256: str | None = None


def add_worker_routes(app: FastAPI, league: League, rules: FleetRules) -> None:
    """Add the workers' routes to ``app``, the API of ``league``; ``rules`` go to workers."""

    @app.get(f"{WORKER_PREFIX}/me")
    def worker_me(worker: WorkerName) -> dict[str, Any]:
        """Who the token belongs to, that this is a league, and its upload limits.

        A worker unpacks the bots' sources with the league's limits.
        """
        return {
            "worker": worker,
            "kind": "league",
            "uploads": dataclasses.asdict(league.config.uploads),
        }

    quota = _Quota()

    @app.get(f"{WORKER_PREFIX}/sources/{{sha256}}")
    def worker_source(sha256: str, claim: str, worker: WorkerName) -> Response:
        """The source archive of a bot version, for a job the claim holds (404 otherwise)."""
        check_digest(sha256)
        with read_only(league.sessions) as session:
            allowed = may_fetch_source(session, worker, claim, sha256)
        if not allowed:
            raise NotFound(f"no job of this claim plays or validates the source {sha256}")
        return Response(league.artifacts.get(sha256), media_type="application/gzip")

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/claim")
    def worker_claim(
        match_id: int, worker: WorkerName, body: Ticket | None = None
    ) -> dict[str, Any]:
        """Claim a queued match with its ticket: what it takes to play it (409: not queued)."""
        with unit_of_work(league.sessions) as session:
            return claim_for_worker(
                session,
                match_id,
                worker,
                rules,
                key=league.key,
                ticket=(body or Ticket()).ticket,
                ahead=(body or Ticket()).ahead,
            )

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/release")
    def worker_release(match_id: int, body: Claimed, worker: WorkerName) -> dict[str, bool]:
        """Hand back a claimed match not begun (a stopping worker's next one): queued again.

        409: the claim holds the match no more.
        """
        with unit_of_work(league.sessions) as session:
            release_for_worker(session, match_id, worker, body.claim)
        return {"released": True}

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/lease")
    def worker_lease(match_id: int, body: Claimed, worker: WorkerName) -> dict[str, bool]:
        """Renew the lease of a claim (409: the claim holds the match no more)."""
        with unit_of_work(league.sessions) as session:
            renew_for_worker(session, match_id, worker, body.claim, rules)
        return {"renewed": True}

    async def held_seats(claim: str, worker: str) -> int:
        def seats() -> int | None:
            with read_only(league.sessions) as session:
                return holds_job(session, worker, claim)

        held = await run_in_threadpool(seats)
        if held is None:
            raise Conflict(f"{worker} holds no job with this claim: it stores nothing")
        return held

    @app.put(f"{WORKER_PREFIX}/artifacts", status_code=201)
    async def worker_artifacts(
        claim: str, request: Request, worker: WorkerName, part: Annotated[list[str], Query()]
    ) -> dict[str, list[str]]:
        """Store a match's replay and logs, sent in one body, for a job the claim holds.

        Each ``part`` is ``SHA256:SIZE``, in the order of the body's bytes. All are stored or
        none: 400 if the body is not the parts' sizes or a part's bytes not its hash; 409 if
        the claim holds no job; 413 past the job's quota.
        """
        parts = announced(part, MAX_JOB_ARTIFACT_BYTES)
        held = await held_seats(claim, worker)
        body = await read_upload(request, sum(size for _, size in parts))
        artifacts = split_artifacts(parts, body)
        quota.take(claim, [len(data) for _, data in artifacts], held + MAX_JOB_ARTIFACTS)

        def store() -> None:
            for _, data in artifacts:
                league.artifacts.put(data)

        await run_in_threadpool(store)
        return {"sha256": [digest for digest, _ in artifacts]}

    @app.put(f"{WORKER_PREFIX}/artifacts/{{sha256}}", status_code=201)
    async def worker_artifact(
        sha256: str, claim: str, request: Request, worker: WorkerName
    ) -> dict[str, str]:
        """Store a replay or a log of a job the claim holds, within the job's quota.

        400 if the bytes are not the hash's; 409 if the claim holds no job; 413 past the
        job's quota.
        """
        check_digest(sha256)
        held = await held_seats(claim, worker)
        data = await read_upload(request, MAX_ARTIFACT_BYTES)
        if hashlib.sha256(data).hexdigest() != sha256:
            raise LeagueError(f"the bytes sent are not those of {sha256}")
        quota.take(claim, [len(data)], held + MAX_JOB_ARTIFACTS)
        await run_in_threadpool(league.artifacts.put, data)
        return {"sha256": sha256}

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/result")
    def worker_result(match_id: int, body: Result, worker: WorkerName) -> dict[str, bool]:
        """Count a played match's result, once (409: the claim holds the match no more)."""
        with unit_of_work(league.sessions) as session:
            record_for_worker(
                session,
                league,
                match_id,
                worker,
                body.claim,
                body.record,
                replay_sha256=body.replay_sha256,
                logs_sha256=body.logs_sha256,
                rules=rules,
            )
        quota.forget(body.claim)
        return {"counted": True}

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/fail")
    def worker_fail(match_id: int, body: Failure, worker: WorkerName) -> dict[str, bool]:
        """A failure of the arena's: the match is requeued, or void after its last attempt."""
        with unit_of_work(league.sessions) as session:
            requeued = fail_for_worker(
                session, match_id, worker, body.claim, body.error, host=body.host
            )
        return {"requeued": requeued}

    @app.post(f"{WORKER_PREFIX}/versions/{{version_id}}/claim")
    def worker_claim_version(
        version_id: int, worker: WorkerName, body: Ticket | None = None
    ) -> dict[str, Any]:
        """Claim a version waiting for validation, with its ticket (409: not waiting)."""
        return claim_version_for_worker(
            league, version_id, worker, rules, ticket=(body or Ticket()).ticket
        )

    @app.post(f"{WORKER_PREFIX}/versions/{{version_id}}/lease")
    def worker_validation_lease(
        version_id: int, body: Claimed, worker: WorkerName
    ) -> dict[str, bool]:
        """Renew the lease of a validation (409: the claim holds the version no more)."""
        ledger = validation_ledger(league, version_id, worker, body.claim, rules)
        renew_validation_for_worker(ledger, worker)
        return {"renewed": True}

    @app.post(f"{WORKER_PREFIX}/versions/{{version_id}}/steps/{{step}}/start")
    def worker_step_start(
        version_id: int, step: StepKind, body: Claimed, worker: WorkerName
    ) -> dict[str, bool]:
        """A validation step started (409: the claim holds the version no more)."""
        ledger = validation_ledger(league, version_id, worker, body.claim, rules)
        start_step_for_worker(ledger, worker, step)
        return {"started": True}

    @app.post(f"{WORKER_PREFIX}/versions/{{version_id}}/steps/{{step}}/end")
    def worker_step_end(
        version_id: int, step: StepKind, body: StepEnd, worker: WorkerName
    ) -> dict[str, str]:
        """A validation step ended; the version's status after it (409: not held)."""
        ledger = validation_ledger(league, version_id, worker, body.claim, rules)
        result = StepResult(body.outcome, body.detail, body.log)
        after = end_step_for_worker(
            ledger,
            worker,
            step,
            result,
            last=body.last,
            replay_sha256=body.replay_sha256,
            rules=rules,
        )
        return {"status": after.value}


class _Quota:
    """What each job (by claim) has stored in the artifact store: artifacts and bytes."""

    def __init__(self) -> None:
        self._used: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, claim: str, sizes: Sequence[int], most: int) -> None:
        """Count artifacts of ``sizes`` bytes for ``claim``, all or none (413: none)."""
        with self._lock:
            count, total = self._used.pop(claim, (0, 0))
            if count + len(sizes) > most or total + sum(sizes) > MAX_JOB_ARTIFACT_BYTES:
                self._used[claim] = (count, total)
                raise ArtifactQuotaExceeded(
                    f"this job has stored {count} artifacts ({total} bytes): a job stores at"
                    f" most {most} (its replay and a log per seat), {MAX_JOB_ARTIFACT_BYTES}"
                    " bytes in all"
                )
            self._used[claim] = (count + len(sizes), total + sum(sizes))
            while len(self._used) > _QUOTAS_KEPT:
                self._used.popitem(last=False)

    def forget(self, claim: str) -> None:
        """The job ended: its count is no longer needed."""
        with self._lock:
            self._used.pop(claim, None)


class ArtifactQuotaExceeded(LeagueError):
    """A job that stored more artifacts, or more bytes, than a job makes (HTTP 413)."""

    status_code = 413
