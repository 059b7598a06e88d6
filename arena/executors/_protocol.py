"""The workers' HTTP protocol: where its routes are, and the bodies a worker posts.

A fleet worker (``arena worker``) talks to whoever published its job, a league
(``arena.league.api._worker_routes``) or an ``arena run --executor celery`` ladder
(:class:`~arena.executors._fleet_pool.FleetPool`), through the same routes under
:data:`WORKER_PREFIX`: it claims a job, renews its lease, uploads artifacts by hash and posts
a result (:class:`Result`) or a failure (:class:`Failure`), each naming the claim it holds.

A match's artifacts (its replay and each seat's log) go up in one request,
``PUT /artifacts?claim=C&part=SHA256:SIZE&part=…``, their bytes one after another in the
body (:func:`artifact_parts`, :func:`split_artifacts`); ``PUT /artifacts/{sha256}`` stores
one, for a worker of an earlier version.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from arena._errors import LeagueError

__all__ = [
    "MAX_ARTIFACT_PARTS",
    "WORKER_PREFIX",
    "Claimed",
    "Failure",
    "Result",
    "announced",
    "artifact_parts",
    "split_artifacts",
]

WORKER_PREFIX = "/api/v1/worker"
"""Where the routes for workers are, on a league or a ladder."""
MAX_ARTIFACT_PARTS = 16
"""The most artifacts one upload may carry (a match makes its replay and a log per seat)."""
_PART = re.compile(r"([0-9a-f]{64}):([0-9]{1,12})")


def artifact_parts(datas: Sequence[bytes]) -> list[str]:
    """The ``part`` query values that announce ``datas``, uploaded in one body, in order."""
    return [f"{hashlib.sha256(d).hexdigest()}:{len(d)}" for d in datas]


def announced(parts: Sequence[str], most_bytes: int) -> list[tuple[str, int]]:
    """Each ``part`` (``SHA256:SIZE``) as a digest and a size, checked before any body is read.

    Raises:
        LeagueError: no part, more than :data:`MAX_ARTIFACT_PARTS`, a malformed one, or more
            than ``most_bytes`` announced in all.
    """
    if not 0 < len(parts) <= MAX_ARTIFACT_PARTS:
        raise LeagueError(f"an upload carries 1 to {MAX_ARTIFACT_PARTS} parts, not {len(parts)}")
    out = []
    for part in parts:
        found = _PART.fullmatch(part)
        if found is None:
            raise LeagueError(f"a part is SHA256:SIZE (64 hex digits, a size), not {part[:80]!r}")
        out.append((found[1], int(found[2])))
    if sum(size for _, size in out) > most_bytes:
        raise LeagueError(f"the parts announce more than {most_bytes} bytes in all")
    return out


def split_artifacts(parts: Sequence[tuple[str, int]], body: bytes) -> list[tuple[str, bytes]]:
    """The artifacts in ``body``, cut as ``parts`` (from :func:`announced`) say, each checked.

    Raises:
        LeagueError: the body's length is not the parts' sizes added up, or a part's bytes do
            not hash to its digest. Nothing of such an upload may be stored.
    """
    if len(body) != sum(size for _, size in parts):
        raise LeagueError(
            f"the body has {len(body)} bytes; its parts announce {sum(size for _, size in parts)}"
        )
    out, at = [], 0
    for digest, size in parts:
        data = body[at : at + size]
        at += size
        if hashlib.sha256(data).hexdigest() != digest:
            raise LeagueError(f"the bytes sent are not those of {digest}")
        out.append((digest, data))
    return out


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
