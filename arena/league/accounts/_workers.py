"""Workers: the machines of a Celery fleet that play the league's matches, and their tokens.

A worker is not a user: it has no bots and no role, and a user's token is no worker's (nor
the reverse). Its token is ``ffw_`` followed by 43 URL-safe characters (256 random bits),
shown once by ``arena league worker add NAME``; the database keeps only HMAC-SHA256 of it
under the league's secret key, in a table of its own (as users' tokens, ``_accounts.py``).
The different prefix lets secret scanners tell a leaked worker token from a user's, and the
two never match each other's pattern, so neither kind is even looked up as the other.
"""

from __future__ import annotations

import datetime as dt
import hmac
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import CHAR, Boolean, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena._errors import Conflict, Forbidden, LeagueError, NotAuthenticated, NotFound
from arena.league._db import Base, UtcDateTime, utcnow
from arena.league.accounts._accounts import hash_token

__all__ = [
    "WORKER_TOKEN_PREFIX",
    "IssuedWorkerToken",
    "Worker",
    "add_worker",
    "authenticate_worker",
    "disable_worker",
    "list_workers",
]

WORKER_TOKEN_PREFIX = "ffw_"
_TOKEN = re.compile(r"^ffw_[A-Za-z0-9_-]{43}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
_LAST_SEEN_RESOLUTION = dt.timedelta(minutes=1)


class Worker(Base):
    """A machine allowed to play the league's matches: its name and its token's keyed hash."""

    __tablename__ = "workers"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    token_hash: Mapped[str] = mapped_column(CHAR(64), unique=True)
    disabled: Mapped[bool] = mapped_column(Boolean(), default=False)
    created: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    last_seen: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())


@dataclass(frozen=True, slots=True)
class IssuedWorkerToken:
    """A worker's freshly issued token, shown once.

    Attributes:
        name: the worker's name.
        token: the token itself (``ffw_…``), never stored.
    """

    name: str
    token: str


def add_worker(
    session: Session,
    key: bytes,
    name: str,
    *,
    replace: bool = False,
    now: dt.datetime | None = None,
) -> IssuedWorkerToken:
    """Add the worker ``name`` (or, with ``replace``, give it a new token); its token.

    Raises:
        LeagueError: ``name`` is not 1-40 letters, digits, ``.``, ``-`` or ``_``.
        Conflict: a worker of that name exists (and not ``replace``).
        NotFound: ``replace`` and no such worker.
    """
    if not _NAME.match(name):
        raise LeagueError(
            "a worker name is 1-40 letters, digits, '.', '-' or '_', starting with a letter or "
            f"digit (got {name!r})"
        )
    token = WORKER_TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = session.scalar(select(Worker).where(Worker.name == name))
    if replace:
        if row is None:
            raise NotFound(f"no worker named {name!r}")
        row.token_hash = hash_token(key, token)
    elif row is not None:
        raise Conflict(f"a worker named {name!r} already exists")
    else:
        session.add(
            Worker(
                name=name,
                token_hash=hash_token(key, token),
                disabled=False,
                created=now or utcnow(),
            )
        )
    session.flush()
    return IssuedWorkerToken(name, token)


def authenticate_worker(
    session: Session, key: bytes, token: str, *, now: dt.datetime | None = None
) -> str:
    """The name of the worker a token belongs to.

    Raises:
        NotAuthenticated: a malformed (a user's token included), unknown or replaced token,
            one message for all.
        Forbidden: the worker is disabled (drained for good).
    """
    refused = NotAuthenticated("invalid worker token")
    if not _TOKEN.match(token):
        raise refused
    digest = hash_token(key, token)
    worker = session.scalar(select(Worker).where(Worker.token_hash == digest))
    if worker is None or not hmac.compare_digest(worker.token_hash, digest):
        raise refused
    if worker.disabled:
        raise Forbidden(f"the worker {worker.name!r} is disabled")
    now = now or utcnow()
    if worker.last_seen is None or now - worker.last_seen >= _LAST_SEEN_RESOLUTION:
        worker.last_seen = now
        session.flush()
    return worker.name


def disable_worker(session: Session, name: str, *, disabled: bool = True) -> None:
    """Disable (or enable again) the worker ``name``: a disabled worker's token is refused.

    Raises:
        NotFound: no such worker.
    """
    row = session.scalar(select(Worker).where(Worker.name == name))
    if row is None:
        raise NotFound(f"no worker named {name!r}")
    row.disabled = disabled
    session.flush()


def list_workers(session: Session) -> list[tuple[str, bool, dt.datetime | None]]:
    """Every worker, by name: its name, whether disabled, when it was last seen."""
    return [
        (w.name, w.disabled, w.last_seen)
        for w in session.scalars(select(Worker).order_by(Worker.name))
    ]
