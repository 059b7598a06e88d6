"""Faults follow their cause: a version whose bot keeps making matches void is suspended.

A match is void when a seat's bot never started in it (``MatchRecord.void``): it is played
out with that seat on the default and counted for nobody, so that a league fault (Docker
gone) costs no one a rating. But a bot can refuse to start on purpose, or by a bug that
validation did not meet, and then every table it is seated at counts for nobody: one such
bot stopped all rating in a league (issue 24, finding 1). So the seat that never started is
charged (unless no seat started at all: the sandbox's failure, not a bot's): its
``match_seats.void_fault`` is set, and when a version has made
``suspend_after`` of its latest ``window`` matches void that way (:class:`FaultLimits`,
``league.toml``'s ``[faults]``), it is **suspended**: out of play, the reason on its page, in
``arena versions`` and in ``/metrics`` (``arena_league_versions{status="suspended"}``); its
matches still queued are withdrawn (finished as void, unplayed), so no table waits on it.
Its owner submits a new version or activates another one.

The scheduler counts void matches as played (``version_stats.voids``): a version's placement
matches are matches *played*, so one that only makes void matches stops being seated first.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from arena.league._home import FaultLimits
from arena.league.bots._bots import BotVersion, VersionStatus
from arena.league.matches._matches import Match, MatchSeat, MatchStatus, seat_names

__all__ = ["charge_voids", "void_causes", "void_result"]

logger = logging.getLogger(__name__)

_REASON_DETAIL = 200
"""The most characters of the last fault's detail that a suspension's reason quotes."""


def void_causes(result: Mapping[str, Any]) -> dict[int, str]:
    """The seats of a void result whose bot never started, each with what went wrong.

    None when no seat started at all: then the sandbox itself failed (Docker gone, the host
    out of resources), the league's fault, and no bot is charged with it.
    """
    if not result.get("void"):
        return {}
    seats = list(result.get("seats", ()))
    if not any(seat.get("started", True) for seat in seats):
        return {}
    why = {int(f["seat"]): str(f.get("detail", "")) for f in result.get("faults", ())}
    return {
        int(seat["seat"]): why.get(int(seat["seat"]), "it never started")
        for seat in seats
        if not seat.get("started", True)
    }


def charge_voids(
    session: Session,
    match_id: int,
    versions: Sequence[int],
    causes: Mapping[int, str],
    limits: FaultLimits,
    *,
    now: dt.datetime,
) -> int:
    """Charge the void match ``match_id`` to the seats in ``causes``; suspend who passed the limit.

    Runs in the transaction that records the match. ``versions`` is the version at each seat.
    Returns how many queued matches were withdrawn (finished as void, unplayed) because
    their version was suspended: the caller counts them with the void matches.
    """
    for seat in causes:
        session.execute(
            update(MatchSeat)
            .where(MatchSeat.match_id == match_id, MatchSeat.seat == seat)
            .values(void_fault=True)
        )
    withdrawn = 0
    for seat, detail in causes.items():
        version = versions[seat]
        recent = (
            select(MatchSeat.void_fault)
            .join(Match, Match.id == MatchSeat.match_id)
            .where(MatchSeat.version_id == version, Match.status == MatchStatus.FINISHED)
            .order_by(Match.id.desc())
            .limit(limits.window)
            .subquery()
        )
        caused = session.scalar(
            select(func.count()).select_from(recent).where(recent.c.void_fault.is_(True))
        )
        if int(caused or 0) >= limits.suspend_after:
            withdrawn += _suspend(session, version, match_id, detail, limits, now)
    return withdrawn


def _suspend(
    session: Session,
    version_id: int,
    match_id: int,
    detail: str,
    limits: FaultLimits,
    now: dt.datetime,
) -> int:
    """Suspend an active version and withdraw its queued matches; how many were withdrawn."""
    cut = detail if len(detail) <= _REASON_DETAIL else detail[: _REASON_DETAIL - 1] + "…"
    reason = (
        f"suspended: it made {limits.suspend_after} of its latest {limits.window} matches void"
        f" by never starting (the last, match {match_id}: {cut})"
    )
    suspended = session.execute(
        update(BotVersion)
        .where(BotVersion.id == version_id, BotVersion.status == VersionStatus.ACTIVE)
        .values(status=VersionStatus.SUSPENDED, reason=reason)
        .returning(BotVersion.id)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    if suspended is None:  # not in play (suspended already, retired, or never active)
        return 0
    queued = list(
        session.scalars(
            select(Match.id)
            .join(MatchSeat, MatchSeat.match_id == Match.id)
            .where(MatchSeat.version_id == version_id, Match.status == MatchStatus.QUEUED)
        )
    )
    for queued_id in queued:
        names = seat_names(session, queued_id)
        session.execute(
            update(Match)
            .where(Match.id == queued_id, Match.status == MatchStatus.QUEUED)
            .values(
                status=MatchStatus.FINISHED,
                finished_at=now,
                result=void_result(
                    names, f"withdrawn unplayed: a version at its table was {reason}"
                ),
            )
        )
    logger.warning(
        "version %d suspended; %d queued matches withdrawn",
        version_id,
        len(queued),
        extra={"version": version_id, "match": match_id},
    )
    return len(queued)


def void_result(bots: Sequence[str], error: str) -> dict[str, Any]:
    """The stored result of a match finished void without being played, and why (``error``).

    The keys of a played match's result (empty), so that readers need no special case.
    """
    return {
        "void": True,
        "bots": list(bots),
        "placements": [],
        "bankrolls": [],
        "start_bankroll": 0,
        "hands": 0,
        "by_cap": False,
        "decisions": 0,
        "seconds": 0.0,
        "luck": None,
        "seats": [],
        "faults": [],
        "logs": [],
        "error": error,
    }
