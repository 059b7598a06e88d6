"""A client of the league's HTTP API (``arena submit``, ``arena league standings``, scripts).

:class:`LeagueClient` has one method per endpoint of ``/api/v1`` (``arena/league/api/_routes.py``)
and answers with the server's JSON. A refusal raises the :class:`~arena.league.LeagueError`
subclass of its status code with the server's own sentence; a server that cannot be
reached, or fails, raises :class:`LeagueUnavailable`.

:func:`client_for` picks the league and token the way the CLI does: ``--url``, else the
league ``arena login`` stored; the stored token only goes to the league it was stored for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from arena._errors import (
    Conflict,
    Forbidden,
    LeagueConfigError,
    LeagueError,
    NotAuthenticated,
    NotFound,
    SubmissionLimitExceeded,
    UploadRejected,
)
from arena.client._credentials import Credentials, load_credentials

__all__ = [
    "FINAL_STATUSES",
    "TOKEN_ENV",
    "LeagueClient",
    "LeagueUnavailable",
    "client_for",
]

TOKEN_ENV = "ARENA_TOKEN"
"""An API token in the environment (CI) is used instead of the stored one."""
FINAL_STATUSES = frozenset({"active", "retired", "rejected"})
"""The statuses of a version whose validation is over."""

JSON = dict[str, Any]

_ERRORS: dict[int, type[LeagueError]] = {
    401: NotAuthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: UploadRejected,
    415: UploadRejected,
    429: SubmissionLimitExceeded,
}


class LeagueUnavailable(LeagueError):
    """The league server cannot be reached, or failed to answer (a 5xx status)."""

    status_code = 503


class LeagueClient:
    """The league at ``url``, as ``token``'s owner (or anonymously, without a token).

    Args:
        url: the server's base URL (``http://127.0.0.1:8000``).
        token: an API token (``ffa_…``), or None for the public endpoints only.
        timeout: seconds to wait for each answer (an upload's included).
        transport: an httpx transport (tests; default: the network).

    Example::

        with LeagueClient("http://127.0.0.1:8000", token) as league:
            submitted = league.submit("mybot", pack_bot(Path("mybot")))
            for version in league.follow("mybot", submitted["version"]["number"]):
                print(version["status"])
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {"Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self.signed_in = token is not None
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> LeagueClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ endpoints

    def health(self) -> JSON:
        """``GET /api/v1/health``: the league's name and version, once its database answers."""
        return self._json("GET", "/api/v1/health")

    def me(self) -> JSON:
        """``GET /api/v1/me``: the account of this client's token."""
        return self._json("GET", "/api/v1/me")

    def submit(self, bot: str, archive: bytes, *, activate: bool = True) -> JSON:
        """Submit ``archive`` (``pack_bot``'s tar.gz) as a new version of ``bot``.

        Returns ``{"version": {...}, "new": bool, "left_today": int | None}``: ``new`` is
        False when the same archive already was a version of the bot.
        """
        return self._json(
            "POST",
            f"/api/v1/bots/{_segment(bot)}/versions",
            params={"activate": "true" if activate else "false"},
            content=archive,
            headers={"Content-Type": "application/gzip"},
            refused=UploadRejected,
        )

    def bots(self) -> list[JSON]:
        """``GET /api/v1/bots``: every bot with its owner and active version."""
        bots: list[JSON] = self._json("GET", "/api/v1/bots")["bots"]
        return bots

    def bot(self, bot: str) -> JSON:
        """``GET /api/v1/bots/BOT``: the bot and its versions, newest first."""
        return self._json("GET", f"/api/v1/bots/{_segment(bot)}")

    def version(self, bot: str, number: int) -> JSON:
        """One version of ``bot``; with its validation steps when it is this caller's."""
        return self._json("GET", f"/api/v1/bots/{_segment(bot)}/versions/{number}")

    def source(self, bot: str, number: int) -> bytes:
        """The tar.gz of a version (its owner and admins only)."""
        return self._bytes("GET", f"/api/v1/bots/{_segment(bot)}/versions/{number}/source")

    def step_log(self, bot: str, number: int, step: str) -> bytes:
        """The log of a validation step (``build``, ``check``, ``match``) of a version."""
        return self._bytes(
            "GET", f"/api/v1/bots/{_segment(bot)}/versions/{number}/steps/{_segment(step)}/log"
        )

    def activate(self, bot: str, number: int) -> JSON:
        """Make a validated version of ``bot`` its active one (rollback or roll-forward)."""
        return self._json("POST", f"/api/v1/bots/{_segment(bot)}/versions/{number}/activate")

    def challenge(self, bot: str, opponents: Sequence[str], version: int | None = None) -> JSON:
        """Ask for an unrated match of your ``bot`` against ``opponents``; the queued match."""
        body: JSON = {"opponents": list(opponents), "version": version}
        return self._json("POST", f"/api/v1/bots/{_segment(bot)}/challenges", json=body)

    def matchup(self, bot: str, other: str) -> JSON:
        """The meetings of ``bot`` and ``other`` over time, and their places' difference."""
        return self._json("GET", f"/api/v1/bots/{_segment(bot)}/vs/{_segment(other)}")

    def disable_bot(self, bot: str) -> JSON:
        """Take ``bot`` out of scheduling (admin)."""
        return self._json("POST", f"/api/v1/bots/{_segment(bot)}/disable")

    def enable_bot(self, bot: str) -> JSON:
        """Schedule ``bot`` again (admin)."""
        return self._json("POST", f"/api/v1/bots/{_segment(bot)}/enable")

    def leaderboard(self) -> JSON:
        """``GET /api/v1/leaderboard``: ``{"league": name, "standings": [row, ...]}``."""
        return self._json("GET", "/api/v1/leaderboard")

    def status(self) -> JSON:
        """``GET /api/v1/status``: queue, match counts and their spread, validations."""
        return self._json("GET", "/api/v1/status")

    def matches(
        self,
        *,
        bot: str | None = None,
        status: str | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> list[JSON]:
        """Matches, newest first; ``before`` (a match id) pages back."""
        params: dict[str, str | int] = {"limit": limit}
        if bot is not None:
            params["bot"] = bot
        if status is not None:
            params["status"] = status
        if before is not None:
            params["before"] = before
        matches: list[JSON] = self._json("GET", "/api/v1/matches", params=params)["matches"]
        return matches

    def match(self, match_id: int) -> JSON:
        """One match: seats, state and, once finished, its result."""
        return self._json("GET", f"/api/v1/matches/{match_id}")

    def replay(self, match_id: int) -> bytes:
        """A finished match's replay (JSON lines); notes of other owners' seats removed."""
        return self._bytes("GET", f"/api/v1/matches/{match_id}/replay")

    def seat_log(self, match_id: int, seat: int) -> bytes:
        """The bot log of one seat of a finished match (that bot's owner and admins only)."""
        return self._bytes("GET", f"/api/v1/matches/{match_id}/logs/{seat}")

    def metrics(self) -> str:
        """``GET /metrics``: the Prometheus text."""
        return self._bytes("GET", "/metrics").decode("utf-8")

    # ------------------------------------------------------------------ following

    def follow(
        self,
        bot: str,
        number: int,
        *,
        interval: float = 1.0,
        timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Iterator[JSON]:
        """Yield version ``number`` of ``bot`` each time it changes, until its validation ends.

        The first answer is always yielded; the last one has a status in
        :data:`FINAL_STATUSES`.

        Raises:
            LeagueError: the version cannot be read (as :meth:`version`).
            TimeoutError: ``timeout`` seconds passed before the validation ended.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        last: JSON | None = None
        while True:
            current = self.version(bot, number)
            if current != last:
                yield current
                last = current
            if current["status"] in FINAL_STATUSES:
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(
                    f"{bot} v{number} is still {current['status']} after {timeout:g} s"
                )
            sleep(interval)

    # ------------------------------------------------------------------ plumbing

    def _send(
        self,
        method: str,
        path: str,
        *,
        refused: type[LeagueError] = LeagueError,
        **kwargs: Any,
    ) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as e:
            raise LeagueUnavailable(f"cannot reach the league at {self.url}: {e}") from e
        if response.is_success:
            return response
        raise _error_of(response, refused)

    def _json(self, method: str, path: str, **kwargs: Any) -> JSON:
        response = self._send(method, path, **kwargs)
        try:
            body = response.json()
        except ValueError as e:
            raise LeagueUnavailable(
                f"the league at {self.url} answered {path} with something that is not JSON"
            ) from e
        if not isinstance(body, dict):
            raise LeagueUnavailable(f"the league at {self.url} answered {path} unexpectedly")
        return body

    def _bytes(self, method: str, path: str, **kwargs: Any) -> bytes:
        return self._send(method, path, **kwargs).content


def _segment(value: str) -> str:
    """``value`` as one path segment: anything that would change the path is escaped."""
    return quote(value, safe="")


def _error_of(response: httpx.Response, refused: type[LeagueError]) -> LeagueError:
    """The error of a refused request, with the server's sentence."""
    try:
        body = response.json()
        message = body["error"] if isinstance(body, dict) else None
    except ValueError:
        message = None
    if not isinstance(message, str) or not message:
        message = f"the league answered {response.status_code} {response.reason_phrase}"
    status = response.status_code
    if status >= 500:
        return LeagueUnavailable(f"the league failed: {message}")
    if status == 400:
        return refused(message)
    return _ERRORS.get(status, LeagueError)(message)


def client_for(
    url: str | None = None,
    *,
    signed_in: bool = True,
    credentials_file: Path | None = None,
    timeout: float = 60.0,
) -> LeagueClient:
    """A client of ``url`` (default: the stored league) with the right token.

    The token is ``$ARENA_TOKEN``, else the one ``arena login`` stored, but a stored token
    goes only to the league it was stored for: a client of another URL gets none (and
    ``signed_in`` then fails), so a mistyped ``--url`` never hands a token to a stranger.

    Args:
        url: the league server; None for the one ``arena login`` stored.
        signed_in: a token is needed (submitting); without it public endpoints suffice.
        credentials_file: the stored credentials (default: ``credentials_path()``).
        timeout: seconds to wait for each answer.

    Raises:
        LeagueConfigError: no league given nor stored, or no token for a command that needs
            one.
        LeagueError: ``url`` is not an http(s) URL.
    """
    try:
        stored: Credentials | None = load_credentials(credentials_file)
    except LeagueConfigError:
        if url is None:
            raise
        stored = None
    target = stored.url if url is None and stored is not None else _checked_url(url)
    token = os.environ.get(TOKEN_ENV, "").strip() or None
    if token is None and stored is not None and stored.url == target:
        token = stored.token
    if token is not None:
        token = Credentials.checked(target, token).token
    elif signed_in:
        raise LeagueConfigError(
            f"no API token for {target}: run `arena login {target}` (or set ${TOKEN_ENV})"
        )
    return LeagueClient(target, token, timeout=timeout)


def _checked_url(url: str | None) -> str:
    if url is None:
        raise LeagueConfigError("not logged in to a league: run `arena login URL TOKEN` first")
    # Credentials.checked checks the form of both; any well-formed token will do here.
    return Credentials.checked(url, "ffa_" + "0" * 43).url
