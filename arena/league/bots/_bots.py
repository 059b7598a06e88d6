"""Bots and their versions, and the validation steps a version goes through.

A bot belongs to one user and has a name unique in the league. Every accepted submission
is a new :class:`BotVersion`, numbered from 1, holding the hash of its source archive in
the artifact store; at most one version of a bot is ``active`` at a time (a partial unique
index says so to the database itself).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    CHAR,
    BigInteger,
    Boolean,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    select,
)
from sqlalchemy import text as sa_text
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena._errors import Conflict, NotFound
from arena.league._db import Base, UtcDateTime, enum_values, utcnow
from arena.league.accounts._accounts import User

__all__ = [
    "DEFAULT_MU",
    "DEFAULT_SIGMA",
    "Bot",
    "BotInfo",
    "BotVersion",
    "StepKind",
    "StepOutcome",
    "ValidationStep",
    "VersionStats",
    "VersionStatus",
    "create_bot",
    "disable_bot",
    "inherited_rating",
    "seat_name",
    "zero_stats",
]

_MANIFEST_NAME_MAX = 40  # flipflop's rule for bot.toml names (sdk/flipflop/_manifest.py)

# openskill's Plackett-Luce defaults, as `arena run` rates bots (arena/ladder/_standings.py).
DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3.0
# A new version is a changed bot: its rating starts at its parent's mean, its uncertainty
# widened by this much (added in quadrature), never beyond a newcomer's.
VERSION_SIGMA_WIDENING = DEFAULT_SIGMA / 2.0


class VersionStatus(StrEnum):
    """Where a bot version is in its life, from upload to play or refusal."""

    UPLOADED = "uploaded"
    """Unpacked safely and stored; validation has not started."""
    BUILDING = "building"
    """Its image is being built offline in the Docker sandbox."""
    CHECKING = "checking"
    """The conformance check is running against it."""
    VALIDATING = "validating"
    """It is playing its validation match against the league's house bots."""
    ACTIVE = "active"
    """Passed every step and plays in the league; at most one version of a bot is."""
    RETIRED = "retired"
    """Passed every step but no longer plays: a newer version, or the owner's choice."""
    REJECTED = "rejected"
    """Failed a step; its validation steps say which and why."""
    SUSPENDED = "suspended"
    """Played, then made too many matches void by never starting in them: taken out of play,
    its reason says why (``arena.league.matches._suspensions``). Its owner submits a new version or
    activates another."""


class StepKind(StrEnum):
    """The validation steps of a submitted version, in the order they run."""

    BUILD = "build"
    """Build the bot's image offline from its runtime's recipe."""
    CHECK = "check"
    """Run the conformance check, as ``arena check`` does locally."""
    MATCH = "match"
    """Play a validation match against the league's house bots."""


class StepOutcome(StrEnum):
    """How a validation step ended."""

    PASSED = "passed"
    """The step succeeded; the next one may run."""
    FAILED = "failed"
    """The bot failed the step; the version is rejected."""
    ERROR = "error"
    """The league failed (not the bot): the step is to be run again, nothing is charged."""


def _enum(cls: type[StrEnum], name: str) -> Enum:
    return Enum(
        cls,
        name=name,
        native_enum=False,
        length=16,
        create_constraint=True,
        values_callable=enum_values,
    )


class Bot(Base):
    """A bot of one owner; its versions are its submissions."""

    __tablename__ = "bots"

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    disabled: Mapped[bool] = mapped_column(Boolean(), default=False)
    created: Mapped[dt.datetime] = mapped_column(UtcDateTime())


class BotVersion(Base):
    """One submitted version of a bot: its source, its status and its rating."""

    __tablename__ = "bot_versions"
    __table_args__ = (
        UniqueConstraint("bot_id", "number"),
        # The same bytes submitted again are the same version (an idempotent re-upload).
        UniqueConstraint("bot_id", "source_sha256"),
        Index(
            "uq_bot_versions_one_active",
            "bot_id",
            unique=True,
            sqlite_where=sa_text("status = 'active'"),
            postgresql_where=sa_text("status = 'active'"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    number: Mapped[int] = mapped_column(Integer())
    status: Mapped[VersionStatus] = mapped_column(_enum(VersionStatus, "version_status"))
    source_sha256: Mapped[str] = mapped_column(CHAR(64))
    created: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    rating_mu: Mapped[float] = mapped_column(Float())
    rating_sigma: Mapped[float] = mapped_column(Float())
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("bot_versions.id"))
    # Whether it becomes active once validated (the owner may ask otherwise: `--no-activate`).
    activate: Mapped[bool] = mapped_column(Boolean(), default=True)
    # The validation job's lease, like a match's: who validates it, until when.
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    # Why it was rejected, in one sentence (the failing step's detail); "" otherwise.
    reason: Mapped[str] = mapped_column(Text(), default="")


class ValidationStep(Base):
    """One validation step of a version: when it ran, how it ended, where its log is."""

    __tablename__ = "validation_steps"
    __table_args__ = (UniqueConstraint("version_id", "step"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"), index=True)
    step: Mapped[StepKind] = mapped_column(_enum(StepKind, "step_kind"))
    outcome: Mapped[StepOutcome | None] = mapped_column(_enum(StepOutcome, "step_outcome"))
    detail: Mapped[str] = mapped_column(Text(), default="")
    log_sha256: Mapped[str | None] = mapped_column(CHAR(64))
    started: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    finished: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())


@dataclass(frozen=True, slots=True)
class BotInfo:
    """A bot as the rest of the league sees it.

    Attributes:
        id: the bot's id.
        name: its name, unique in the league.
        owner: its owner's user name.
        disabled: a disabled bot is not scheduled and takes no submissions.
        created: when its first version was submitted (UTC).
    """

    id: int
    name: str
    owner: str
    disabled: bool
    created: dt.datetime


def inherited_rating(parent_mu: float, parent_sigma: float) -> tuple[float, float]:
    """The starting rating of a new version whose predecessor is rated (mu, sigma).

    The mean is kept; the uncertainty grows by ``VERSION_SIGMA_WIDENING`` in quadrature,
    capped at a newcomer's ``DEFAULT_SIGMA``: a changed bot is probably near its old self,
    but its first matches must be able to move it quickly.
    """
    sigma = min(math.hypot(parent_sigma, VERSION_SIGMA_WIDENING), DEFAULT_SIGMA)
    return parent_mu, sigma


def create_bot(
    session: Session, owner: str, name: str, *, now: dt.datetime | None = None
) -> BotInfo:
    """Register the bot ``name`` to the user ``owner``.

    Raises:
        NotFound: no such user.
        Conflict: the name is taken in this league.
    """
    user = session.scalar(select(User).where(User.name == owner))
    if user is None:
        raise NotFound(f"no user named {owner!r}")
    if session.scalar(select(Bot.id).where(Bot.name == name)) is not None:
        raise Conflict(f"a bot named {name!r} already exists in this league")
    bot = Bot(owner_id=user.id, name=name, disabled=False, created=now or utcnow())
    session.add(bot)
    session.flush()
    return BotInfo(bot.id, bot.name, user.name, bot.disabled, bot.created)


def disable_bot(session: Session, name: str, *, disabled: bool = True) -> BotInfo:
    """Disable (or enable again) the bot ``name``: it is no longer scheduled.

    Raises:
        NotFound: no such bot.
    """
    row = session.execute(
        select(Bot, User.name).join(User, Bot.owner_id == User.id).where(Bot.name == name)
    ).one_or_none()
    if row is None:
        raise NotFound(f"no bot named {name!r}")
    bot, owner = row
    bot.disabled = disabled
    session.flush()
    return BotInfo(bot.id, bot.name, owner, bot.disabled, bot.created)


def seat_name(bot: str, number: int) -> str:
    """The name version ``number`` of ``bot`` plays under: ``BOT-vNUMBER``.

    Unique in the league, and a valid manifest name (at most 40 characters: a longer bot
    name, which only a bot made outside ``submit_version`` can have, is cut).
    """
    suffix = f"-v{number}"
    return bot[: _MANIFEST_NAME_MAX - len(suffix)] + suffix


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
    # Void matches it sat in, whoever made them void: played, though counted for nobody.
    voids: Mapped[int] = mapped_column(Integer(), default=0)


def zero_stats(version: int) -> dict[str, Any]:
    """The columns of a new ``version_stats`` row of version ``version``: zeros."""
    return {
        "version_id": version,
        "matches": 0,
        "first_places": 0,
        "place_sum": 0.0,
        "place_sq_sum": 0.0,
        "score_sum": 0.0,
        "score_sq_sum": 0.0,
        "adjusted_matches": 0,
        "adjusted_sum": 0.0,
        "adjusted_sq_sum": 0.0,
        "chips_sum": 0,
        "net_chips_sum": 0,
        "hands_sum": 0,
        "faults": 0,
        "voids": 0,
        "last_played": None,
    }
