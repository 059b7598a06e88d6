"""Accounts: users, their roles and their API tokens.

A token is ``ffa_`` followed by 43 URL-safe characters (256 random bits). It is shown once,
when issued; the database keeps only HMAC-SHA256 of it under the league's secret key, so a
copy of the database alone neither reveals a token nor lets anyone check a guess. The
``ffa_`` prefix lets secret scanners find leaked tokens.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import CHAR, Boolean, Enum, ForeignKey, Integer, String, delete, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena._errors import Conflict, Forbidden, LeagueError, NotAuthenticated, NotFound
from arena.league._db import Base, UtcDateTime, enum_values, utcnow

__all__ = [
    "TOKEN_PREFIX",
    "Account",
    "ApiToken",
    "IssuedToken",
    "Role",
    "User",
    "authenticate",
    "authenticate_digest",
    "create_user",
    "disable_user",
    "end_sessions",
    "find_user",
    "hash_token",
    "issue_token",
    "list_users",
]

TOKEN_PREFIX = "ffa_"
# 32 random bytes, URL-safe base64 without padding: 43 characters.
_TOKEN = re.compile(r"^ffa_[A-Za-z0-9_-]{43}$")
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
# `last_used_at` is written at most this often per token, so reads do not all become writes.
_LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


class Role(StrEnum):
    """What an account may do in its league."""

    ADMIN = "admin"
    """Runs the league: adds users, disables users and bots, sees everything."""
    USER = "user"
    """A bot author: submits bots and manages their own."""


class User(Base):
    """A person (or a team) with an account in the league."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    role: Mapped[Role] = mapped_column(
        Enum(
            Role,
            name="role",
            native_enum=False,
            length=16,
            create_constraint=True,
            values_callable=enum_values,
        )
    )
    disabled: Mapped[bool] = mapped_column(Boolean(), default=False)
    created: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    # Counts the times the user signed out of the web pages: a session cookie carries the
    # count it was made under, and is refused once the count moved on.
    session_epoch: Mapped[int] = mapped_column(Integer(), default=0)


class ApiToken(Base):
    """One API token of a user: only its keyed hash is kept."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(CHAR(64), unique=True)
    created: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())


@dataclass(frozen=True, slots=True)
class Account:
    """A user as the rest of the league sees it.

    Attributes:
        id: the user's id.
        name: the user's name (unique in the league).
        role: admin or user.
        disabled: a disabled account cannot authenticate or submit.
        created: when the account was made (UTC).
        session_epoch: how many times the account signed out of the web pages; its web
            sessions made before the last sign-out are over (``end_sessions``).
    """

    id: int
    name: str
    role: Role
    disabled: bool
    created: dt.datetime
    session_epoch: int = 0

    @classmethod
    def of(cls, user: User) -> Account:
        """The value of a ``User`` row."""
        return cls(
            user.id, user.name, user.role, user.disabled, user.created, user.session_epoch or 0
        )


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A freshly issued token: the only time its plaintext exists outside its owner's hands.

    Attributes:
        account: whose token it is.
        token: the token itself, to be shown once and never stored.
    """

    account: Account
    token: str


def hash_token(key: bytes, token: str) -> str:
    """HMAC-SHA256 of ``token`` under the league key ``key``, as 64 hex digits."""
    return hmac.new(key, token.encode("utf-8"), hashlib.sha256).hexdigest()


def create_user(
    session: Session, name: str, *, role: Role = Role.USER, now: dt.datetime | None = None
) -> Account:
    """Add a user.

    Raises:
        LeagueError: ``name`` is not 1-40 letters, digits, ``-`` or ``_``, starting with a
            letter or digit.
        Conflict: a user of that name exists.
    """
    if not _USER_NAME.match(name):
        raise LeagueError(
            f"a user name is 1-40 letters, digits, '-' or '_', starting with a letter or digit"
            f" (got {name!r})"
        )
    if session.scalar(select(User.id).where(User.name == name)) is not None:
        raise Conflict(f"a user named {name!r} already exists")
    user = User(name=name, role=role, disabled=False, created=now or utcnow())
    session.add(user)
    session.flush()
    return Account.of(user)


def find_user(session: Session, name: str) -> Account:
    """The account named ``name``.

    Raises:
        NotFound: no such user.
    """
    return Account.of(_user(session, name))


def list_users(session: Session) -> list[Account]:
    """Every account, by name."""
    return [Account.of(u) for u in session.scalars(select(User).order_by(User.name))]


def issue_token(
    session: Session,
    key: bytes,
    name: str,
    *,
    replace: bool = True,
    expires_at: dt.datetime | None = None,
    now: dt.datetime | None = None,
) -> IssuedToken:
    """Issue a new API token to the user ``name``.

    Args:
        session: the unit of work.
        key: the league's secret key (``secret.key`` in the league home).
        name: the user.
        replace: revoke the user's other tokens (regenerating a lost or leaked token).
        expires_at: when the token stops working, or None for never.
        now: the current time (tests).

    Raises:
        NotFound: no such user.
    """
    user = _user(session, name)
    if replace:
        session.execute(delete(ApiToken).where(ApiToken.user_id == user.id))
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(
            user_id=user.id,
            token_hash=hash_token(key, token),
            created=now or utcnow(),
            expires_at=expires_at,
        )
    )
    session.flush()
    return IssuedToken(Account.of(user), token)


def authenticate(
    session: Session, key: bytes, token: str, *, now: dt.datetime | None = None
) -> Account:
    """The account a token belongs to.

    The row is found by the token's keyed hash (a unique index), and the hashes are then
    compared in constant time, so neither step tells an attacker how close a guess was.

    Raises:
        NotAuthenticated: a malformed, unknown, revoked or expired token (one message for
            all, so the answer says nothing about which tokens exist).
        Forbidden: the token is valid but its account is disabled.
    """
    if not _TOKEN.match(token):
        raise NotAuthenticated("invalid or expired API token")
    return authenticate_digest(session, hash_token(key, token), now=now)


def authenticate_digest(
    session: Session, digest: str, *, now: dt.datetime | None = None
) -> Account:
    """The account of the token whose keyed hash is ``digest`` (a web session holds it).

    Raises:
        NotAuthenticated: an unknown, revoked or expired token.
        Forbidden: its account is disabled.
    """
    refused = NotAuthenticated("invalid or expired API token")
    row = session.execute(
        select(ApiToken, User)
        .join(User, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == digest)
    ).one_or_none()
    if row is None:
        raise refused
    api_token, user = row
    if not hmac.compare_digest(api_token.token_hash, digest):
        raise refused
    now = now or utcnow()
    if api_token.expires_at is not None and api_token.expires_at <= now:
        raise refused
    if user.disabled:
        raise Forbidden(f"the account {user.name!r} is disabled")
    if api_token.last_used_at is None or now - api_token.last_used_at >= _LAST_USED_RESOLUTION:
        api_token.last_used_at = now
        session.flush()
    return Account.of(user)


def end_sessions(session: Session, user_id: int) -> None:
    """End every web session of the user ``user_id`` (signing out): its epoch moves on."""
    session.execute(
        update(User).where(User.id == user_id).values(session_epoch=User.session_epoch + 1)
    )
    session.flush()


def disable_user(session: Session, name: str, *, disabled: bool = True) -> Account:
    """Disable (or enable again) the user ``name``: a disabled user cannot authenticate.

    Raises:
        NotFound: no such user.
    """
    user = _user(session, name)
    user.disabled = disabled
    session.flush()
    return Account.of(user)


def _user(session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return user
