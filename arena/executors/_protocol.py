"""The workers' HTTP protocol: where its routes are, and the bodies a worker posts.

A fleet worker (``arena worker``) talks to whoever published its job, a league
(``arena.league.api._worker_routes``) or an ``arena run --executor celery`` ladder
(:class:`~arena.executors._fleet_pool.FleetPool`), through the same routes under
:data:`WORKER_PREFIX`: it claims a job, renews its lease, uploads artifacts by hash and posts
a result (:class:`Result`) or a failure (:class:`Failure`), each naming the claim it holds.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["WORKER_PREFIX", "Claimed", "Failure", "Result"]

WORKER_PREFIX = "/api/v1/worker"
"""Where the routes for workers are, on a league or a ladder."""


class Claimed(BaseModel):
    """A call about a match the worker claimed: the claim the league gave it."""

    claim: str


class Failure(Claimed):
    """A match the worker failed to play by the arena's fault, and why.

    ``host``: the worker's own resources ran out (no descriptor left, a full disk), which
    says nothing about the match: it is never made void for it.
    """

    error: str
    host: bool = False


class Result(Claimed):
    """A played match: its record (``MatchRecord`` as JSON) and its artifacts' hashes."""

    record: dict[str, Any]
    replay_sha256: str
    logs_sha256: list[str | None]
