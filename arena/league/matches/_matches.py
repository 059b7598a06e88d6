"""Matches: queued → running (under a lease) → finished, exactly once.

A match row is the single source of truth for a match. A worker *claims* a queued match
with one conditional ``UPDATE … WHERE status = 'queued'``, which sets a lease (its owner and
an expiry): two workers racing for one match cannot both get it. The result goes in with
another conditional ``UPDATE … WHERE status = 'running' AND lease_owner = :worker``, so a
result is recorded at most once, and only by the worker that holds the match. A worker
that dies leaves its lease to run out; :func:`requeue_expired` then puts the match back in
the queue, to be played again from scratch. Together: every match is finished exactly once,
whatever crashes (``docs/league.md``).

The rating update that belongs to a result is written by the caller in the same
transaction as :func:`finish_match`, and only when it returns True.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    CHAR,
    JSON,
    Boolean,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    case,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena._errors import LeagueError
from arena.league._db import Base, UtcDateTime, enum_values, utcnow
from arena.league.bots._bots import Bot, BotVersion, seat_name

__all__ = [
    "ClaimedMatch",
    "Match",
    "MatchKind",
    "MatchSeat",
    "MatchStatus",
    "claim_match",
    "claimable",
    "enqueue_match",
    "finish_match",
    "insert_matches",
    "next_queued",
    "play_order",
    "renew_lease",
    "requeue_expired",
    "seat_names",
]


class MatchStatus(StrEnum):
    """Where a match is in its life."""

    QUEUED = "queued"
    """Waiting for a worker: new, or put back after a lease ran out."""
    RUNNING = "running"
    """Claimed by a worker whose lease (owner, expiry) is on the row."""
    FINISHED = "finished"
    """Its result is recorded; it never changes again."""


class MatchKind(StrEnum):
    """Why a match is played."""

    RATED = "rated"
    """Scheduled by the league: it counts for the ratings and the standings."""
    CHALLENGE = "challenge"
    """Asked for by a bot's owner against bots of their choice: never rated (docs/league.md)."""
    FINAL = "final"
    """A match of a season's final (``_seasons.py``): never rated, its standings its own."""


class Match(Base):
    """One match between bot versions: its state, its lease and, once finished, its result."""

    __tablename__ = "matches"
    __table_args__ = (Index("ix_matches_status_lease_expires", "status", "lease_expires"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    status: Mapped[MatchStatus] = mapped_column(
        Enum(
            MatchStatus,
            name="match_status",
            native_enum=False,
            length=16,
            create_constraint=True,
            values_callable=enum_values,
        )
    )
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    attempts: Mapped[int] = mapped_column(Integer(), default=0)
    created: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON())
    replay_sha256: Mapped[str | None] = mapped_column(CHAR(64))
    # The deal: every match of one duplicate group has the same seed, seats rotated. The
    # seed is secret until the match is over (docs/security.md): no API shows it.
    seed: Mapped[str] = mapped_column(String(64), default="")
    group_id: Mapped[int | None] = mapped_column(Integer(), index=True)
    rotation: Mapped[int] = mapped_column(Integer(), default=0)
    # The order in which results were counted (1, 2, …): ratings are a fold in this order.
    result_seq: Mapped[int | None] = mapped_column(Integer(), unique=True)
    kind: Mapped[MatchKind] = mapped_column(
        Enum(
            MatchKind,
            name="match_kind",
            native_enum=False,
            length=16,
            create_constraint=True,
            values_callable=enum_values,
        ),
        default=MatchKind.RATED,
        server_default=MatchKind.RATED.value,
    )
    # Who asked for a challenge (None for a rated match).
    requested_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    # The season whose final this match is part of (None for any other match).
    season_id: Mapped[int | None] = mapped_column(ForeignKey("seasons.id"), index=True)


class MatchSeat(Base):
    """Which bot version sits at which seat of a match."""

    __tablename__ = "match_seats"

    match_id: Mapped[int] = mapped_column(
        ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    seat: Mapped[int] = mapped_column(Integer(), primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"), index=True)
    # Filled in when the result is counted: its place, final chips, the places its luck was
    # worth (None: unknown), and its version's rating right after this match.
    place: Mapped[int | None] = mapped_column(Integer())
    chips: Mapped[int | None] = mapped_column(Integer())
    luck: Mapped[float | None] = mapped_column(Float())
    mu_after: Mapped[float | None] = mapped_column(Float())
    sigma_after: Mapped[float | None] = mapped_column(Float())
    # Set when the match was void because this seat's bot never started (its fault).
    void_fault: Mapped[bool] = mapped_column(Boolean(), default=False)


@dataclass(frozen=True, slots=True)
class ClaimedMatch:
    """A match a worker now holds.

    Attributes:
        id: the match.
        attempt: 1 the first time it is played, more after leases ran out.
        seats: the bot version at each seat, seat 0 first.
        lease_expires: when the match goes back to the queue unless renewed or finished.
    """

    id: int
    attempt: int
    seats: tuple[int, ...]
    lease_expires: dt.datetime


def enqueue_match(
    session: Session,
    seats: Sequence[int],
    *,
    now: dt.datetime | None = None,
    kind: MatchKind = MatchKind.RATED,
    requested_by: int | None = None,
    seed: str = "",
) -> int:
    """Queue a match of the versions ``seats`` (seat 0 first); return its id.

    ``kind``, ``requested_by`` and ``seed`` (hex; secret until the match is over) are stored
    as given: a challenge has all three (``_challenges.py``).

    Raises:
        LeagueError: fewer than 2 seats, or a version seated twice.
    """
    if len(seats) < 2 or len(set(seats)) != len(seats):
        raise LeagueError(f"a match needs 2 or more different versions (got {list(seats)})")
    match = Match(
        status=MatchStatus.QUEUED,
        attempts=0,
        created=now or utcnow(),
        kind=kind,
        requested_by=requested_by,
        seed=seed,
    )
    session.add(match)
    session.flush()
    session.add_all(MatchSeat(match_id=match.id, seat=i, version_id=v) for i, v in enumerate(seats))
    session.flush()
    return match.id


def insert_matches(
    session: Session, rows: Sequence[Mapping[str, Any]], seats: Sequence[Sequence[int]]
) -> list[int]:
    """Insert queued matches (``rows``, their columns) and their seats; their ids, in order.

    ``seats[i]`` is the versions of ``rows[i]``, seat 0 first. One statement for the matches
    and one for their seats, however many: a scheduler's groups, a final's round.
    """
    ids = list(
        session.scalars(insert(Match).returning(Match.id, sort_by_parameter_order=True), rows)
    )
    session.execute(
        insert(MatchSeat),
        [
            {"match_id": match_id, "seat": seat, "version_id": version}
            for match_id, versions in zip(ids, seats, strict=True)
            for seat, version in enumerate(versions)
        ],
    )
    return ids


def claim_match(
    session: Session,
    worker: str,
    lease: dt.timedelta,
    *,
    now: dt.datetime | None = None,
    match_id: int | None = None,
) -> ClaimedMatch | None:
    """Claim the oldest queued match for ``worker`` with a lease of ``lease``; None if none.

    Challenges go first (oldest first), then rated matches: an owner waits for a challenge
    no longer than for a slot (docs/league.md; how many there may be is bounded where they
    are asked for). One statement picks and claims: ``UPDATE … WHERE id = (the oldest
    queued) AND status = 'queued'``. On PostgreSQL the inner select skips rows another claim
    has locked (``FOR UPDATE SKIP LOCKED``), so concurrent workers take different matches without
    waiting for each other; SQLite runs one writing transaction at a time. Commit soon
    after: until then the claim holds its row lock (or SQLite's write lock).

    With ``match_id``, only that match is claimed, if it is queued (a fleet worker claims
    the match its task names: a task delivered twice, or after the match was played, finds
    it running or finished and gets None).

    A queued match whose ``lease_expires`` lies ahead is backing off after a failure
    (:func:`~arena.league.release_match`'s ``retry_after``): it is not claimed before then.
    """
    now = now or utcnow()
    expires = now + lease
    target: Any = match_id
    if target is None:
        target = (
            select(Match.id)
            .where(claimable(now))
            .order_by(*play_order())
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
    claimed = session.execute(
        update(Match)
        .where(Match.id == target, claimable(now))
        .values(
            status=MatchStatus.RUNNING,
            lease_owner=worker,
            lease_expires=expires,
            attempts=Match.attempts + 1,
        )
        .returning(Match.id, Match.attempts)
    ).one_or_none()
    if claimed is None:
        return None
    claimed_id, attempt = claimed
    seats = session.scalars(
        select(MatchSeat.version_id)
        .where(MatchSeat.match_id == claimed_id)
        .order_by(MatchSeat.seat)
    ).all()
    return ClaimedMatch(claimed_id, attempt, tuple(seats), expires)


def renew_lease(
    session: Session,
    match_id: int,
    worker: str,
    lease: dt.timedelta,
    *,
    now: dt.datetime | None = None,
) -> bool:
    """Extend ``worker``'s lease on a running match; False if it no longer holds it."""
    now = now or utcnow()
    renewed = session.execute(
        update(Match)
        .where(
            Match.id == match_id,
            Match.status == MatchStatus.RUNNING,
            Match.lease_owner == worker,
        )
        .values(lease_expires=now + lease)
        .returning(Match.id)
    ).scalar_one_or_none()
    return renewed is not None


def finish_match(
    session: Session,
    match_id: int,
    worker: str,
    result: Mapping[str, Any],
    *,
    replay_sha256: str | None = None,
    now: dt.datetime | None = None,
) -> bool:
    """Record the result of a match ``worker`` holds; False (nothing written) if it does not.

    A worker whose lease ran out and whose match was requeued (or finished by another
    worker) gets False: its result is discarded and counts nowhere. A lease that ran out
    but was not yet requeued still belongs to its worker, whose whole match is as good as
    any other's.
    """
    finished = session.execute(
        update(Match)
        .where(
            Match.id == match_id,
            Match.status == MatchStatus.RUNNING,
            Match.lease_owner == worker,
        )
        .values(
            status=MatchStatus.FINISHED,
            lease_owner=None,
            lease_expires=None,
            finished_at=now or utcnow(),
            result=dict(result),
            replay_sha256=replay_sha256,
        )
        .returning(Match.id)
    ).scalar_one_or_none()
    return finished is not None


def play_order() -> tuple[Any, ...]:
    """The order queued matches are played in: challenges, a final's, then rated ones.

    Each kind by id, oldest first.
    """
    return (
        case((Match.kind == MatchKind.CHALLENGE, 0), (Match.kind == MatchKind.FINAL, 1), else_=2),
        Match.id,
    )


def claimable(now: dt.datetime) -> Any:
    """Queued matches that may be claimed at ``now``: none backing off past it."""
    return (Match.status == MatchStatus.QUEUED) & (
        Match.lease_expires.is_(None) | (Match.lease_expires <= now)
    )


def next_queued(session: Session, limit: int, *, now: dt.datetime | None = None) -> list[int]:
    """The ``limit`` matches :func:`claim_match` would claim next (their ids), not claimed.

    An executor starts their bots ahead (``arena.match._prestart``); another worker may
    claim one first, which costs only the instances started for nothing.
    """
    return list(
        session.scalars(
            select(Match.id).where(claimable(now or utcnow())).order_by(*play_order()).limit(limit)
        )
    )


def requeue_expired(session: Session, *, now: dt.datetime | None = None) -> list[int]:
    """Put every running match whose lease has run out back in the queue; return their ids."""
    requeued = session.scalars(
        update(Match)
        .where(Match.status == MatchStatus.RUNNING, Match.lease_expires <= (now or utcnow()))
        .values(status=MatchStatus.QUEUED, lease_owner=None, lease_expires=None)
        .returning(Match.id)
    ).all()
    return sorted(requeued)


def seat_names(session: Session, match_id: int) -> list[str]:
    """The names the seats of match ``match_id`` play under (:func:`seat_name`), seat 0 first."""
    return [
        seat_name(bot, number)
        for bot, number in session.execute(
            select(Bot.name, BotVersion.number)
            .join(BotVersion, BotVersion.bot_id == Bot.id)
            .join(MatchSeat, MatchSeat.version_id == BotVersion.id)
            .where(MatchSeat.match_id == match_id)
            .order_by(MatchSeat.seat)
        )
    ]
