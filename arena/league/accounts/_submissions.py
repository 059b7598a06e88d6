"""Submissions per user and day: the accounting behind the daily submission limit.

One row per (user, UTC day) holds how many submissions the user made that day. A
submission takes one with a single conditional ``UPDATE … WHERE count < limit``: the
database serialises concurrent submissions of one user on that row, so two uploads racing
for the last slot cannot both get it, on SQLite or PostgreSQL.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Date, ForeignKey, Integer, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena._errors import Forbidden, NotFound, SubmissionLimitExceeded
from arena.league._db import Base, insert_ignore, utcnow
from arena.league.accounts._accounts import User

__all__ = [
    "DEFAULT_SUBMISSIONS_PER_DAY",
    "SubmissionCount",
    "limit_exceeded",
    "submissions_today",
    "take_submission",
]

DEFAULT_SUBMISSIONS_PER_DAY = 10


class SubmissionCount(Base):
    """How many submissions one user made on one UTC day."""

    __tablename__ = "submission_counts"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[dt.date] = mapped_column(Date(), primary_key=True)
    count: Mapped[int] = mapped_column(Integer())


def take_submission(
    session: Session,
    user: str,
    *,
    limit: int = DEFAULT_SUBMISSIONS_PER_DAY,
    now: dt.datetime | None = None,
) -> int:
    """Count one submission of ``user`` today (UTC); return how many are left today.

    Call it in the same unit of work as the submission it counts: if the submission is
    refused later in that transaction, the rollback gives the slot back.

    Raises:
        NotFound: no such user.
        Forbidden: the user is disabled.
        SubmissionLimitExceeded: the user has already made ``limit`` submissions today.
    """
    account = session.execute(select(User.id, User.disabled).where(User.name == user)).one_or_none()
    if account is None:
        raise NotFound(f"no user named {user!r}")
    user_id, disabled = account
    if disabled:
        raise Forbidden(f"the account {user!r} is disabled")
    day = (now or utcnow()).astimezone(dt.UTC).date()
    insert_ignore(session, SubmissionCount, {"user_id": user_id, "day": day, "count": 0})
    taken = session.execute(
        update(SubmissionCount)
        .where(
            SubmissionCount.user_id == user_id,
            SubmissionCount.day == day,
            SubmissionCount.count < limit,
        )
        .values(count=SubmissionCount.count + 1)
        .returning(SubmissionCount.count)
    ).scalar_one_or_none()
    if taken is None:
        raise limit_exceeded(user, limit)
    return limit - taken


def limit_exceeded(user: str, limit: int) -> SubmissionLimitExceeded:
    """The refusal of a submission past the daily limit (HTTP 429), in one sentence."""
    return SubmissionLimitExceeded(
        f"{user} has made {limit} submissions today, the most this league allows a day;"
        f" the count starts again at 00:00 UTC"
    )


def submissions_today(session: Session, user: str, *, now: dt.datetime | None = None) -> int:
    """How many submissions ``user`` has made today (UTC)."""
    day = (now or utcnow()).astimezone(dt.UTC).date()
    count = session.scalar(
        select(SubmissionCount.count)
        .join(User, SubmissionCount.user_id == User.id)
        .where(User.name == user, SubmissionCount.day == day)
    )
    return count or 0
