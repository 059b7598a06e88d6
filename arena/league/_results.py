"""Results: a finished match counted once, with its rating update, in one transaction.

Per version, :class:`VersionStats` holds running sums of what the standings need, updated in
the same transaction as the result (``docs/league.md``), so the leaderboard is one read of
one row per version, however many matches were played.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from arena.league._db import Base, UtcDateTime

__all__ = ["Counter", "VersionStats"]


class VersionStats(Base):
    """Running sums over the counted matches of one version (one row per version)."""

    __tablename__ = "version_stats"

    version_id: Mapped[int] = mapped_column(
        ForeignKey("bot_versions.id", ondelete="CASCADE"), primary_key=True
    )
    matches: Mapped[int] = mapped_column(Integer(), default=0)
    first_places: Mapped[int] = mapped_column(Integer(), default=0)
    place_sum: Mapped[float] = mapped_column(Float(), default=0.0)
    place_sq_sum: Mapped[float] = mapped_column(Float(), default=0.0)
    score_sum: Mapped[float] = mapped_column(Float(), default=0.0)
    score_sq_sum: Mapped[float] = mapped_column(Float(), default=0.0)
    # Luck-adjusted places, over the matches whose result carried a luck estimate.
    adjusted_matches: Mapped[int] = mapped_column(Integer(), default=0)
    adjusted_sum: Mapped[float] = mapped_column(Float(), default=0.0)
    adjusted_sq_sum: Mapped[float] = mapped_column(Float(), default=0.0)
    chips_sum: Mapped[int] = mapped_column(BigInteger(), default=0)
    net_chips_sum: Mapped[int] = mapped_column(BigInteger(), default=0)
    hands_sum: Mapped[int] = mapped_column(BigInteger(), default=0)
    faults: Mapped[int] = mapped_column(Integer(), default=0)
    last_played: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())


class Counter(Base):
    """A named counter, taken with one ``UPDATE … SET value = value + 1 RETURNING value``."""

    __tablename__ = "counters"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger(), default=0)
