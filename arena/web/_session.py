"""Sign-in for the web pages: a session cookie bound to an API token, and CSRF tokens.

A person signs in with their API token (the one ``arena league user add`` printed). The
token itself is never kept: the ``ffa_session`` cookie holds the token's keyed hash (the
value the database indexes), the account's session epoch and an expiry, signed with a key
derived from the league's secret key. Each request finds the account by that hash, so a
token that is regenerated, revoked or whose account is disabled ends every session made
with it. Signing out moves the account's epoch on (``users.session_epoch``): a copy of the
cookie kept from before no longer opens anything, in this browser or another. The cookie is
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
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.formparsers import MultiPartParser
from starlette.requests import Request
from starlette.responses import Response

from arena._errors import Forbidden, LeagueError
from arena.league import League
from arena.league._db import unit_of_work
from arena.league.accounts._accounts import Account, authenticate_digest, end_sessions, hash_token

__all__ = [
    "CSRF_COOKIE",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "CsrfFirst",
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
    expires = int(time.time()) + SESSION_SECONDS
    payload = _b64(json.dumps({"t": digest, "e": expires, "g": account.session_epoch}).encode())
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


def end_session(response: Response, league: League, account: Account | None) -> None:
    """Sign out: end every session of ``account`` and remove the session cookie.

    The cookie alone is not enough: a copy of it (saved, stolen) would still open the
    account until it expires. Moving the account's epoch on ends that one too.
    """
    if account is not None:
        with unit_of_work(league.sessions) as session:
            end_sessions(session, account.id)
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
        # A cookie made before sessions had epochs was made under the first one.
        digest, expires, epoch = str(data["t"]), int(data["e"]), int(data.get("g", 0))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if expires < time.time():
        return None
    try:
        with unit_of_work(league.sessions) as session:
            account = authenticate_digest(session, digest)
    except LeagueError:
        return None  # revoked, expired or disabled: signed out
    if account.session_epoch != epoch:
        return None  # the account signed out since this session began
    return account


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


class CsrfFirst(MultiPartParser):
    """Starlette's multipart parser, refusing any file that no valid CSRF token came before.

    A form's fields arrive in the order of the page (``csrf`` first): checking the token
    when the first file part begins means a forged form is refused before a byte of its
    file is read, let alone kept in a temporary file.
    """

    def __init__(
        self,
        headers: Headers,
        stream: AsyncGenerator[bytes, None],
        *,
        valid: Callable[[str | None], bool],
        refusal: str,
        **limits: Any,
    ) -> None:
        super().__init__(headers, stream, **limits)
        self._valid = valid
        self._refusal = refusal
        self._checked = False

    def on_headers_finished(self) -> None:
        """A part's headers are in: before a file's data, check the fields so far."""
        super().on_headers_finished()
        # ``_current_part`` is Starlette's (1.x); its ``file`` is set for a file part only.
        if self._current_part.file is None or self._checked:
            return
        token = next((v for k, v in self.items if k == "csrf" and isinstance(v, str)), None)
        if not self._valid(token):
            raise Forbidden(self._refusal)
        self._checked = True


def valid_csrf(request: Request, keys: Keys, token: str | None) -> bool:
    """Whether ``token`` (a form's ``csrf`` field) matches the request's nonce cookie."""
    nonce = request.cookies.get(CSRF_COOKIE) or ""
    if len(nonce) < 16 or not token:
        return False
    return hmac.compare_digest(_sign(keys.csrf, nonce), token)
