"""Sign-in for the web pages: a session cookie bound to an API token, and CSRF tokens.

A person signs in with their API token (the one ``arena league user add`` printed). The
token itself is never kept: the ``ffa_session`` cookie holds the token's keyed hash (the
value the database indexes) and an expiry, signed with a key derived from the league's
secret key. Each request finds the account by that hash, so a token that is regenerated,
revoked or whose account is disabled ends every session made with it. The cookie is
``HttpOnly`` (no script reads it) and ``SameSite=Lax`` (no other site's form sends it).

Every form that changes something carries a CSRF token: the HMAC of a random nonce that
lives in the ``ffa_csrf`` cookie (``HttpOnly``, ``SameSite=Strict``). Another site can
neither read the cookie nor compute the HMAC without the league's key, so it cannot forge
a form; the comparison is constant-time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from arena.league import League
from arena.league._accounts import Account, authenticate_digest, hash_token
from arena.league._db import unit_of_work
from arena.league._errors import LeagueError

__all__ = [
    "CSRF_COOKIE",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "Keys",
    "csrf_nonce",
    "csrf_token",
    "current_account",
    "end_session",
    "keep_csrf",
    "start_session",
    "valid_csrf",
]

SESSION_COOKIE = "ffa_session"
CSRF_COOKIE = "ffa_csrf"
SESSION_SECONDS = 14 * 24 * 3600
"""How long a sign-in lasts (two weeks), unless its token goes first."""


@dataclass(frozen=True, slots=True)
class Keys:
    """The web's keys, derived from the league's secret key (one per purpose).

    Attributes:
        session: signs session cookies.
        csrf: makes CSRF tokens from nonces.
    """

    session: bytes
    csrf: bytes

    @classmethod
    def of(cls, league: League) -> Keys:
        """The keys of ``league``."""
        return cls(
            hmac.new(league.key, b"flipflop-arena/web/session", hashlib.sha256).digest(),
            hmac.new(league.key, b"flipflop-arena/web/csrf", hashlib.sha256).digest(),
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, payload.encode("ascii"), hashlib.sha256).digest())


def start_session(
    response: Response, league: League, keys: Keys, token: str, *, secure: bool
) -> Account:
    """Check ``token`` and set the session cookie on ``response``; the signed-in account.

    Raises:
        NotAuthenticated: not a valid token.
        Forbidden: its account is disabled.
    """
    digest = hash_token(league.key, token.strip())
    with unit_of_work(league.sessions) as session:
        # The token's format is checked by ``authenticate``'s rules: a hash of anything
        # else is simply unknown.
        account = authenticate_digest(session, digest)
    payload = _b64(json.dumps({"t": digest, "e": int(time.time()) + SESSION_SECONDS}).encode())
    response.set_cookie(
        SESSION_COOKIE,
        f"{payload}.{_sign(keys.session, payload)}",
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="lax",
        secure=secure,
        path="/",
    )
    return account


def end_session(response: Response) -> None:
    """Remove the session cookie (signing out)."""
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")


def current_account(request: Request, league: League, keys: Keys) -> Account | None:
    """The account signed in on ``request``; None when nobody is (or the session ended)."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie or cookie.count(".") != 1:
        return None
    payload, signature = cookie.split(".")
    if not hmac.compare_digest(_sign(keys.session, payload), signature):
        return None
    try:
        data = json.loads(_unb64(payload))
        digest, expires = str(data["t"]), int(data["e"])
    except (ValueError, KeyError, TypeError):
        return None
    if expires < time.time():
        return None
    try:
        with unit_of_work(league.sessions) as session:
            return authenticate_digest(session, digest)
    except LeagueError:
        return None  # revoked, expired or disabled: signed out


def csrf_nonce(request: Request) -> tuple[str, bool]:
    """The request's CSRF nonce, and whether it is new (then :func:`keep_csrf` must set it)."""
    nonce = request.cookies.get(CSRF_COOKIE) or ""
    if len(nonce) >= 16:
        return nonce, False
    return secrets.token_urlsafe(24), True


def csrf_token(keys: Keys, nonce: str) -> str:
    """The token the forms of a page carry for ``nonce``."""
    return _sign(keys.csrf, nonce)


def keep_csrf(response: Response, nonce: str) -> None:
    """Set the CSRF nonce cookie on ``response``."""
    response.set_cookie(
        CSRF_COOKIE, nonce, httponly=True, samesite="strict", path="/", max_age=SESSION_SECONDS
    )


def valid_csrf(request: Request, keys: Keys, token: str | None) -> bool:
    """Whether ``token`` (a form's ``csrf`` field) matches the request's nonce cookie."""
    nonce = request.cookies.get(CSRF_COOKIE) or ""
    if len(nonce) < 16 or not token:
        return False
    return hmac.compare_digest(_sign(keys.csrf, nonce), token)
