"""The league's HTTP routes for its fleet's workers, under ``/api/v1/worker/``.

Every route takes a *worker* token (``Authorization: Bearer ffw_…``, ``arena league worker
add NAME``) and nothing else: anonymous callers, users and admins alike get 401, and a
worker's token opens no user's route (``_api.py`` skips these paths when it reads a user's
token). The routes are thin; the use cases are in ``_dispatch.py``:

- ``GET /me``: the worker's name (a worker checks its token when it starts);
- ``GET /sources/{sha256}``: a bot version's source archive, by content hash;
- ``POST /matches/{id}/claim``: claim a queued match; its seed, seats, rules and clock;
- ``POST /matches/{id}/lease``: renew the claim's lease (409: lost, stop playing);
- ``PUT /artifacts/{sha256}``: a replay or a seat's log, stored under its hash;
- ``POST /matches/{id}/result``: the result, counted once (409: not held, not counted);
- ``POST /matches/{id}/fail``: a failure of the arena's: requeued, or void at the last try;
- ``POST /versions/{id}/claim``: claim a version waiting for validation: its source's hash;
- ``POST /versions/{id}/lease``: renew the claim's validation lease;
- ``POST /versions/{id}/steps/{step}/start`` and ``…/end``: a validation step's progress,
  written as a local validator writes it (409: the claim holds the version no more).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from pydantic import BaseModel
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from arena.league._accounts import bearer_token
from arena.league._artifacts import check_digest
from arena.league._bots import BotVersion, StepKind, StepOutcome
from arena.league._db import unit_of_work
from arena.league._dispatch import (
    FleetRules,
    claim_for_worker,
    claim_version_for_worker,
    end_step_for_worker,
    fail_for_worker,
    record_for_worker,
    renew_for_worker,
    renew_validation_for_worker,
    start_step_for_worker,
    validation_ledger,
)
from arena.league._errors import LeagueError, NotAuthenticated, NotFound
from arena.league._fleet import WORKER_PREFIX
from arena.league._gate import WORKER_STATE
from arena.league._home import League
from arena.league._validation import StepResult
from arena.league._workers import authenticate_worker

__all__ = ["MAX_ARTIFACT_BYTES", "WORKER_PREFIX", "add_worker_routes", "worker_of"]

MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
"""The largest replay or log a worker may upload."""


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


class Claimed(BaseModel):
    """A call about a match the worker claimed: the claim the league gave it."""

    claim: str


class Failure(Claimed):
    """A match the worker failed to play by the arena's fault, and why."""

    error: str


class StepEnd(Claimed):
    """How a validation step ended, on the worker."""

    outcome: StepOutcome
    detail: str
    log: str
    last: bool


class Result(Claimed):
    """A played match: its record (``MatchRecord`` as JSON) and its artifacts' hashes."""

    record: dict[str, Any]
    replay_sha256: str
    logs_sha256: list[str | None]


def add_worker_routes(app: FastAPI, league: League, rules: FleetRules) -> None:
    """Add the workers' routes to ``app``, the API of ``league``; ``rules`` go to workers."""
    from arena.league._api import _read_upload  # the API's streaming, size-capped reader

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

    @app.get(f"{WORKER_PREFIX}/sources/{{sha256}}")
    def worker_source(sha256: str, worker: WorkerName) -> Response:
        """The source archive of a bot version, by its hash (only versions' sources)."""
        check_digest(sha256)
        with unit_of_work(league.sessions) as session:
            known = session.scalar(
                select(BotVersion.id).where(BotVersion.source_sha256 == sha256).limit(1)
            )
        if known is None:
            raise NotFound(f"no bot version has the source {sha256}")
        return Response(league.artifacts.get(sha256), media_type="application/gzip")

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/claim")
    def worker_claim(match_id: int, worker: WorkerName) -> dict[str, Any]:
        """Claim a queued match: what it takes to play it (409: not queued)."""
        with unit_of_work(league.sessions) as session:
            return claim_for_worker(session, match_id, worker, rules)

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/lease")
    def worker_lease(match_id: int, body: Claimed, worker: WorkerName) -> dict[str, bool]:
        """Renew the lease of a claim (409: the claim holds the match no more)."""
        with unit_of_work(league.sessions) as session:
            renew_for_worker(session, match_id, worker, body.claim, rules)
        return {"renewed": True}

    @app.put(f"{WORKER_PREFIX}/artifacts/{{sha256}}", status_code=201)
    async def worker_artifact(sha256: str, request: Request, worker: WorkerName) -> dict[str, str]:
        """Store a replay or a log under its hash (400 if the bytes are not the hash's)."""
        check_digest(sha256)
        data = await _read_upload(request, MAX_ARTIFACT_BYTES)
        if hashlib.sha256(data).hexdigest() != sha256:
            raise LeagueError(f"the bytes sent are not those of {sha256}")
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
            )
        return {"counted": True}

    @app.post(f"{WORKER_PREFIX}/matches/{{match_id}}/fail")
    def worker_fail(match_id: int, body: Failure, worker: WorkerName) -> dict[str, bool]:
        """A failure of the arena's: the match is requeued, or void after its last attempt."""
        with unit_of_work(league.sessions) as session:
            requeued = fail_for_worker(session, match_id, worker, body.claim, body.error)
        return {"requeued": requeued}

    @app.post(f"{WORKER_PREFIX}/versions/{{version_id}}/claim")
    def worker_claim_version(version_id: int, worker: WorkerName) -> dict[str, Any]:
        """Claim a version waiting for validation (409: not waiting)."""
        return claim_version_for_worker(league, version_id, worker, rules)

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
        after = end_step_for_worker(ledger, worker, step, result, last=body.last)
        return {"status": after.value}
