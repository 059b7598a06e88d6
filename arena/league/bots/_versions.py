"""Bot versions: submitting one, listing them, activating one, and where their sources are.

A submission (``docs/league.md``, "The life of a submission") holds no transaction open
while it reads, unpacks or stores the archive:

1. the submitter must own the bot (it is made for them if it does not exist yet), and
   neither they nor the bot may be disabled (a read-only transaction);
2. the archive is spooled and hashed; the same archive for the same bot again is the
   version already made of it, answered as such, and takes no submission slot;
3. otherwise a user with no slot left today is refused; the archive is unpacked with every
   check of ``unpack_upload`` into a temporary directory (a refusal raises
   :class:`UploadRejected`: no slot is taken, nothing is written), and its bytes go to the
   artifact store;
4. one short writing transaction checks step 1 again, takes the day's slot
   (``take_submission``) and adds the version: status ``uploaded``, numbered one more than
   the bot's last, its parent the bot's active version (else its newest), its rating
   inherited from the parent (``inherited_rating``).

Validation (``_validation.py``) takes it from there; :func:`claim_validation` hands the
oldest waiting version to a validator under a lease, as ``claim_match`` does for matches.
:func:`activate_version` is rollback and roll-forward: any version that passed validation
can be made the bot's active one again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import io
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from arena._errors import ArtifactError, Conflict, Forbidden, LeagueError, NotFound
from arena.client._pack import UploadLimits
from arena.league._artifacts import check_digest
from arena.league._db import READ_ONLY_OPTION, read_only, unit_of_work, utcnow
from arena.league._home import League
from arena.league.accounts._accounts import User
from arena.league.accounts._submissions import limit_exceeded, submissions_today, take_submission
from arena.league.bots._bots import (
    DEFAULT_MU,
    DEFAULT_SIGMA,
    Bot,
    BotVersion,
    StepKind,
    StepOutcome,
    ValidationStep,
    VersionStats,
    VersionStatus,
    inherited_rating,
    seat_name,
    zero_stats,
)
from arena.league.bots._uploads import _spool, unpack_upload
from flipflop import BotManifest, read_manifest

__all__ = [
    "BOT_NAME_MAX",
    "PENDING",
    "StepInfo",
    "Submitted",
    "VersionInfo",
    "activate_version",
    "cached_source",
    "claim_validation",
    "forget_steps",
    "get_version",
    "list_versions",
    "make_active",
    "new_version",
    "seat_manifest",
    "seat_name",
    "source_dir",
    "submit_version",
    "version_info",
    "waiting_versions",
]

BOT_NAME_MAX = 32
"""The longest bot name a submission may make: ``NAME-vNUMBER`` (the name a version plays
under, :func:`seat_manifest`) must stay within a manifest name's 40 characters."""
_BOT_NAME = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9_-]{{0,{BOT_NAME_MAX - 1}}}$")

PENDING = (
    VersionStatus.UPLOADED,
    VersionStatus.BUILDING,
    VersionStatus.CHECKING,
    VersionStatus.VALIDATING,
)
"""The statuses of a version whose validation has not ended."""
_VALIDATED = (VersionStatus.ACTIVE, VersionStatus.RETIRED)


@dataclass(frozen=True, slots=True)
class StepInfo:
    """One validation step of a version, as its owner sees it.

    Attributes:
        step: which step.
        outcome: how it ended; None while it runs.
        detail: what happened, in the words ``arena check`` uses locally for a failure.
        log_sha256: its log in the artifact store, or None.
        started: when it started (UTC).
        finished: when it ended (UTC), or None while it runs.
    """

    step: StepKind
    outcome: StepOutcome | None
    detail: str
    log_sha256: str | None
    started: dt.datetime
    finished: dt.datetime | None


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """A version of a bot, with its validation steps.

    Attributes:
        id: the version's id.
        bot: its bot's name.
        owner: its bot's owner.
        number: its number within the bot, from 1.
        status: where it is in its life.
        source_sha256: its archive in the artifact store.
        created: when it was submitted (UTC).
        rating_mu: its rating's mean.
        rating_sigma: its rating's uncertainty.
        parent: the number of the version it replaced, or None for a bot's first.
        activate: whether it becomes active once validated.
        reason: why it was rejected, "" otherwise.
        steps: its validation steps, in the order they run.
    """

    id: int
    bot: str
    owner: str
    number: int
    status: VersionStatus
    source_sha256: str
    created: dt.datetime
    rating_mu: float
    rating_sigma: float
    parent: int | None
    activate: bool
    reason: str
    steps: tuple[StepInfo, ...]


@dataclass(frozen=True, slots=True)
class Submitted:
    """What a submission made.

    Attributes:
        version: the version.
        new: False when the same archive already was a version of this bot (nothing made).
        left_today: submissions the user has left today; None when none was counted.
    """

    version: VersionInfo
    new: bool
    left_today: int | None


def submit_version(
    league: League,
    user: str,
    bot: str,
    archive: bytes | BinaryIO,
    *,
    activate: bool = True,
    now: dt.datetime | None = None,
) -> Submitted:
    """Submit ``archive`` (a packed bot, ``pack_bot``) as a new version of ``user``'s ``bot``.

    The bot is made, owned by ``user``, if the league has none of that name. Only its
    owner may submit to a bot (an admin no more than anyone else). See the module docstring
    for the order of the checks.

    No transaction is open while the archive is read, unpacked and stored (issue 24,
    finding 2: on SQLite a writing transaction holds the league's write lock, and a hostile
    archive of 2,000 files refused at its last would have held it for the whole unpack).
    Short read-only transactions check the caller and look for the same archive first; one
    short writing transaction at the end checks again, takes the day's slot and adds the
    version. An archive stored there and then refused (the limit reached meanwhile) stays
    in the content-addressed store, unreferenced.

    Args:
        league: the league (its database, limits and artifact store).
        user: who submits.
        bot: the bot's name in the league.
        archive: the tar.gz, as bytes or a stream (read in chunks).
        activate: make the version active once it passes validation.
        now: the time of the submission (default: now).

    Raises:
        NotFound: no such user.
        Forbidden: the user or the bot is disabled, or another user owns the bot.
        LeagueError: ``bot`` is not a valid bot name.
        SubmissionLimitExceeded: the user has no submission left today.
        UploadRejected: the archive is too big, malformed, hostile or has no valid bot.toml.
    """
    now = now or utcnow()
    with read_only(league.sessions) as session:
        _may_submit(session, user, bot)
        left = league.config.submissions_per_day - submissions_today(session, user, now=now)
    limits = league.config.uploads
    source = io.BytesIO(archive) if isinstance(archive, bytes | bytearray) else archive
    with tempfile.TemporaryFile(prefix="ffa-submit-") as spool:
        sha256, _ = _spool(source, spool, limits)
        with read_only(league.sessions) as session:
            same = _same_archive(session, bot, sha256)
        if same is not None:
            return same
        if left <= 0:  # refused before the unpack; the writing transaction checks again
            raise limit_exceeded(user, league.config.submissions_per_day)
        with tempfile.TemporaryDirectory(prefix="ffa-unpack-") as scratch:
            spool.seek(0)
            unpack_upload(spool, Path(scratch), limits)
        spool.seek(0)
        stored = league.artifacts.put_stream(spool)
    assert stored == sha256, "the artifact store hashed other bytes than were checked"
    with unit_of_work(league.sessions) as session:
        return _add_version(session, league, user, bot, sha256, activate=activate, now=now)


def _may_submit(session: Session, user: str, bot: str) -> tuple[int, Bot | None]:
    """The submitter's id and the bot's row (None: a new bot), if ``user`` may submit to it.

    Raises:
        NotFound: no such user.
        Forbidden: the user or the bot is disabled, or another user owns the bot.
        LeagueError: a new bot's name is not a valid bot name.
    """
    account = session.execute(select(User.id, User.disabled).where(User.name == user)).one_or_none()
    if account is None:
        raise NotFound(f"no user named {user!r}")
    user_id, user_disabled = account
    if user_disabled:
        raise Forbidden(f"the account {user!r} is disabled")
    # The bot's row is locked until the end of the transaction (PostgreSQL; SQLite runs one
    # writer at a time anyway): two submissions to one bot get consecutive numbers.
    query = select(Bot).where(Bot.name == bot)
    row = session.scalar(query if _reading(session) else query.with_for_update())
    if row is None and not _BOT_NAME.match(bot):
        raise LeagueError(
            f"a bot name is 1-{BOT_NAME_MAX} letters, digits, '-' or '_', starting with a letter"
            f" or digit (got {bot[:80]!r})"
        )
    if row is not None and row.owner_id != user_id:
        raise Forbidden(f"the bot {bot!r} belongs to another user: only its owner submits to it")
    if row is not None and row.disabled:
        raise Forbidden(f"the bot {bot!r} is disabled: it takes no submissions")
    return user_id, row


def _reading(session: Session) -> bool:
    """Whether ``session`` is a :func:`read_only` unit of work (no row locks to take)."""
    return bool(session.connection().get_execution_options().get(READ_ONLY_OPTION))


def _same_archive(session: Session, bot: str, sha256: str) -> Submitted | None:
    """The version of ``bot`` made of the archive ``sha256`` already, as a re-submission."""
    same = session.scalar(
        select(BotVersion)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .where(Bot.name == bot, BotVersion.source_sha256 == sha256)
    )
    return None if same is None else Submitted(_info(session, same), new=False, left_today=None)


def _add_version(
    session: Session,
    league: League,
    user: str,
    bot: str,
    sha256: str,
    *,
    activate: bool,
    now: dt.datetime,
) -> Submitted:
    """Add the checked and stored archive ``sha256`` as ``bot``'s next version (one slot)."""
    user_id, row = _may_submit(session, user, bot)  # again: things may have changed meanwhile
    if row is not None:
        same = _same_archive(session, bot, sha256)
        if same is not None:  # the same archive, submitted twice at once
            return same
    left = take_submission(session, user, limit=league.config.submissions_per_day, now=now)
    if row is None:
        row = Bot(owner_id=user_id, name=bot, disabled=False, created=now)
        session.add(row)
        session.flush()
    version = new_version(
        session, row.id, sha256, status=VersionStatus.UPLOADED, activate=activate, now=now
    )
    return Submitted(_info(session, version), new=True, left_today=left)


def new_version(
    session: Session,
    bot_id: int,
    sha256: str,
    *,
    status: VersionStatus,
    activate: bool,
    now: dt.datetime,
) -> BotVersion:
    """Add the bot ``bot_id``'s next version, of the stored archive ``sha256``, in ``status``.

    It takes the next number, the version it replaces as its parent (``_parent``), its
    parent's rating as it inherits it (or openskill's defaults for a first version) and
    zeroed running sums.
    """
    parent = _parent(session, bot_id)
    mu, sigma = (
        (DEFAULT_MU, DEFAULT_SIGMA)
        if parent is None
        else inherited_rating(parent.rating_mu, parent.rating_sigma)
    )
    last = session.scalar(select(func.max(BotVersion.number)).where(BotVersion.bot_id == bot_id))
    version = BotVersion(
        bot_id=bot_id,
        number=(last or 0) + 1,
        status=status,
        source_sha256=sha256,
        created=now,
        rating_mu=mu,
        rating_sigma=sigma,
        parent_id=None if parent is None else parent.id,
        activate=activate,
        lease_owner=None,
        lease_expires=None,
        reason="",
    )
    session.add(version)
    session.flush()
    session.add(_zero_stats(version.id))
    session.flush()
    return version


def _parent(session: Session, bot_id: int) -> BotVersion | None:
    """The version a new one of ``bot_id`` replaces: the active one, else the newest."""
    active = session.scalar(
        select(BotVersion).where(
            BotVersion.bot_id == bot_id, BotVersion.status == VersionStatus.ACTIVE
        )
    )
    if active is not None:
        return active
    return session.scalar(
        select(BotVersion)
        .where(BotVersion.bot_id == bot_id)
        .order_by(BotVersion.number.desc())
        .limit(1)
    )


def _zero_stats(version_id: int) -> VersionStats:
    return VersionStats(**zero_stats(version_id))


def list_versions(session: Session, bot: str) -> list[VersionInfo]:
    """Every version of ``bot``, the newest first.

    Raises:
        NotFound: no such bot.
    """
    row = _bot(session, bot)
    versions = session.scalars(
        select(BotVersion).where(BotVersion.bot_id == row.id).order_by(BotVersion.number.desc())
    ).all()
    return _infos(session, versions)


def get_version(session: Session, bot: str, number: int) -> VersionInfo:
    """Version ``number`` of ``bot``.

    Raises:
        NotFound: no such bot, or no such version of it.
    """
    return _info(session, _version(session, bot, number))


def activate_version(session: Session, bot: str, number: int) -> VersionInfo:
    """Make version ``number`` the active one of ``bot`` (rollback, or roll forward).

    Only a version that passed validation (``active`` or ``retired``) can be; the version
    active until now is retired first, in the same transaction, so the bot never has two
    (the partial unique index would refuse it). Activating the active version changes
    nothing.

    Raises:
        NotFound: no such bot or version.
        Conflict: the version was rejected or has not finished its validation.
    """
    version = _version(session, bot, number)
    if version.status is VersionStatus.SUSPENDED:
        raise Conflict(
            f"version {number} of {bot!r} was {_first_line(version.reason)}: submit a new"
            " version, or activate another one"
        )
    if version.status is VersionStatus.REJECTED:
        raise Conflict(
            f"version {number} of {bot!r} was rejected ({_first_line(version.reason)}):"
            " only a version that passed validation can be activated"
        )
    if version.status not in _VALIDATED:
        raise Conflict(
            f"version {number} of {bot!r} has not passed validation yet (it is"
            f" {version.status.value}): only a version that passed it can be activated"
        )
    make_active(session, version.bot_id, version.id)
    session.refresh(version)
    return _info(session, version)


def make_active(session: Session, bot_id: int, version_id: int) -> None:
    """Retire ``bot_id``'s active version (if another) and make ``version_id`` active.

    Two statements in this order: the partial unique index allows one active version per
    bot at every moment, so the old one must be retired before the new one is activated.
    """
    session.execute(
        update(BotVersion)
        .where(
            BotVersion.bot_id == bot_id,
            BotVersion.status == VersionStatus.ACTIVE,
            BotVersion.id != version_id,
        )
        .values(status=VersionStatus.RETIRED)
        .execution_options(synchronize_session="fetch")
    )
    session.execute(
        update(BotVersion)
        .where(BotVersion.id == version_id)
        .values(status=VersionStatus.ACTIVE)
        .execution_options(synchronize_session="fetch")
    )
    session.flush()


def claim_validation(
    session: Session,
    worker: str,
    lease: dt.timedelta,
    *,
    now: dt.datetime | None = None,
    version_id: int | None = None,
) -> int | None:
    """Claim the oldest version waiting for validation for ``worker``; its id, or None.

    Waiting: ``uploaded`` with no lease, or any status of an unfinished validation
    (``uploaded``, ``building``, ``checking``, ``validating``) whose lease has run out: its
    validator died, and the validation starts again from its first step. Versions of a
    disabled bot or user wait until they are enabled again. One conditional
    ``UPDATE`` picks and claims, as :func:`~arena.league.claim_match` does (``FOR UPDATE
    SKIP LOCKED`` on PostgreSQL), so two validators never hold one version. With
    ``version_id``, only that version is claimed, if it is waiting (a fleet worker's task).
    """
    now = now or utcnow()
    waiting = _waiting(now)
    target: Any = version_id
    if target is None:
        target = (
            select(BotVersion.id)
            .where(waiting)
            .order_by(BotVersion.id)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
    claimed = session.execute(
        update(BotVersion)
        .where(BotVersion.id == target, waiting)
        .values(lease_owner=worker, lease_expires=now + lease)
        .returning(BotVersion.id)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    return claimed


def _waiting(now: dt.datetime) -> Any:
    """Versions waiting for a validator (see :func:`claim_validation`)."""
    enabled = (
        select(Bot.id)
        .join(User, Bot.owner_id == User.id)
        .where(Bot.disabled.is_(False), User.disabled.is_(False))
    )
    return (
        BotVersion.status.in_(PENDING)
        & (BotVersion.lease_owner.is_(None) | (BotVersion.lease_expires <= now))
        & BotVersion.bot_id.in_(enabled)
    )


def waiting_versions(session: Session, *, limit: int, now: dt.datetime | None = None) -> list[int]:
    """The ids of the oldest ``limit`` versions waiting for a validator, oldest first."""
    return list(
        session.scalars(
            select(BotVersion.id)
            .where(_waiting(now or utcnow()))
            .order_by(BotVersion.id)
            .limit(limit)
        )
    )


def source_dir(league: League, sha256: str) -> Path:
    """The unpacked source of archive ``sha256`` of the artifact store (unpacked once).

    It is kept under ``HOME/cache/sources/SHA256``, unpacked with the league's upload
    limits into a temporary directory beside it and renamed into place, so a reader never
    sees half a source, and two threads or processes that race both end with the same one.
    Treat it as read-only: sandboxes copy it, image builds read it.

    Raises:
        ArtifactError: the archive is not in the store, or its bytes are not its hash.
        UploadRejected: the archive no longer passes the league's upload limits.
    """
    return cached_source(
        league.home / "cache" / "sources",
        sha256,
        lambda: league.artifacts.get(sha256),
        league.config.uploads,
    )


def cached_source(
    cache: Path, sha256: str, fetch: Callable[[], bytes], limits: UploadLimits
) -> Path:
    """The source of archive ``sha256`` unpacked under ``cache/SHA256``, fetched only once.

    ``fetch`` gives the archive's bytes (the artifact store's, or a fleet worker's download
    from the league), checked against ``sha256`` before they are unpacked with ``limits``
    into a temporary directory beside the final one and renamed into place (see
    :func:`source_dir`).

    Raises:
        ArtifactError: ``sha256`` is no digest, or the bytes fetched are not its.
        UploadRejected: the archive does not pass ``limits``.
    """
    check_digest(sha256)
    final = cache / sha256
    if final.is_dir():
        return final
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = fetch()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ArtifactError(f"the archive fetched as {sha256} has other bytes")
    scratch = Path(tempfile.mkdtemp(dir=cache, prefix=f".{sha256[:12]}-"))
    try:
        unpack_upload(io.BytesIO(data), scratch, limits)
        scratch.chmod(0o755)
        try:
            os.rename(scratch, final)
        except OSError:
            if not final.is_dir():  # not another unpacker's win: a real failure
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return final


def seat_manifest(league: League, bot: str, number: int, sha256: str) -> BotManifest:
    """The manifest version ``number`` of ``bot`` plays with: its ``bot.toml``, renamed.

    Its name is :func:`seat_name` (``greedy-v3``), so records, replays and standings name
    the version, whatever its ``bot.toml`` calls it.

    Raises:
        ArtifactError: its archive is missing or corrupt.
        UploadRejected: its archive no longer passes the league's upload limits.
        ManifestError: its ``bot.toml`` is not valid (cannot happen to an accepted upload).
    """
    manifest = read_manifest(source_dir(league, sha256))
    return dataclasses.replace(manifest, name=seat_name(bot, number))


# ---------------------------------------------------------------------- reading


def _bot(session: Session, name: str) -> Bot:
    row = session.scalar(select(Bot).where(Bot.name == name))
    if row is None:
        raise NotFound(f"no bot named {name!r}")
    return row


def _version(session: Session, bot: str, number: int) -> BotVersion:
    row = _bot(session, bot)
    version = session.scalar(
        select(BotVersion).where(BotVersion.bot_id == row.id, BotVersion.number == number)
    )
    if version is None:
        raise NotFound(f"the bot {bot!r} has no version {number}")
    return version


def version_info(session: Session, version_id: int) -> VersionInfo:
    """The version with id ``version_id``.

    Raises:
        NotFound: no such version.
    """
    version = session.get(BotVersion, version_id)
    if version is None:
        raise NotFound(f"no bot version with id {version_id}")
    return _info(session, version)


def _info(session: Session, version: BotVersion) -> VersionInfo:
    return _infos(session, [version])[0]


def _infos(session: Session, versions: Sequence[BotVersion]) -> list[VersionInfo]:
    """Build the infos of ``versions`` with one query for bots, parents and steps each."""
    if not versions:
        return []
    bot_ids = {v.bot_id for v in versions}
    bots = {
        bot_id: (name, owner)
        for bot_id, name, owner in session.execute(
            select(Bot.id, Bot.name, User.name)
            .join(User, Bot.owner_id == User.id)
            .where(Bot.id.in_(bot_ids))
        )
    }
    parent_ids = {v.parent_id for v in versions if v.parent_id is not None}
    parents: dict[int, int] = {}
    if parent_ids:
        rows = session.execute(
            select(BotVersion.id, BotVersion.number).where(BotVersion.id.in_(parent_ids))
        )
        parents = {parent_id: number for parent_id, number in rows}
    steps: dict[int, list[StepInfo]] = {v.id: [] for v in versions}
    order = {kind: i for i, kind in enumerate(StepKind)}
    for step in session.scalars(select(ValidationStep).where(ValidationStep.version_id.in_(steps))):
        steps[step.version_id].append(
            StepInfo(
                step.step,
                step.outcome,
                step.detail,
                step.log_sha256,
                step.started,
                step.finished,
            )
        )
    return [
        VersionInfo(
            id=v.id,
            bot=bots[v.bot_id][0],
            owner=bots[v.bot_id][1],
            number=v.number,
            status=v.status,
            source_sha256=v.source_sha256,
            created=v.created,
            rating_mu=v.rating_mu,
            rating_sigma=v.rating_sigma,
            parent=None if v.parent_id is None else parents.get(v.parent_id),
            activate=v.activate,
            reason=v.reason,
            steps=tuple(sorted(steps[v.id], key=lambda s: order[s.step])),
        )
        for v in versions
    ]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no reason given"


def forget_steps(session: Session, version_id: int, kinds: Iterable[StepKind] = StepKind) -> None:
    """Delete the validation steps ``kinds`` of a version (a validation starting again)."""
    session.execute(
        delete(ValidationStep).where(
            ValidationStep.version_id == version_id, ValidationStep.step.in_(list(kinds))
        )
    )
