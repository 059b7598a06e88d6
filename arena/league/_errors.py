"""Errors raised by the league.

Hierarchy (the root, :class:`arena.LeagueError`, lives in ``arena/_errors.py``)::

    LeagueError                      400: a league request refused or failed
    ├── NotAuthenticated             401: no token, an unknown, revoked or expired token
    ├── Forbidden                    403: a disabled account, or an action beyond one's role
    ├── NotFound                     404: no such user, bot or version (or not yours to see)
    ├── Conflict                     409: a name already taken, a league already there
    ├── SubmissionLimitExceeded      429: more submissions today than the league allows
    ├── UploadRejected               400: an upload that is malformed, too big or hostile
    ├── ArtifactError                500: an artifact missing, or its bytes not its hash
    └── LeagueConfigError            400: a league home or ``league.toml`` that cannot be used

Each error's message is one sentence meant for the person who made the request; the API
answers with ``status_code`` and that message, the CLI prints it.
"""

from __future__ import annotations

from arena._errors import LeagueError

__all__ = [
    "ArtifactError",
    "Conflict",
    "Forbidden",
    "LeagueConfigError",
    "LeagueError",
    "NotAuthenticated",
    "NotFound",
    "SubmissionLimitExceeded",
    "UploadRejected",
]


class NotAuthenticated(LeagueError):
    """No token, or one that is unknown, revoked or expired."""

    status_code = 401


class Forbidden(LeagueError):
    """A disabled account or bot, or an action beyond the account's role."""

    status_code = 403


class NotFound(LeagueError):
    """No such object, or one the caller may not see (never told apart, so ids leak nothing)."""

    status_code = 404


class Conflict(LeagueError):
    """A name already taken, or a league already set up where one was to be created."""

    status_code = 409


class SubmissionLimitExceeded(LeagueError):
    """The account has used up its submissions for the day (UTC)."""

    status_code = 429


class UploadRejected(LeagueError):
    """An upload refused before or while unpacking: malformed, too big, hostile or no bot."""

    status_code = 400


class ArtifactError(LeagueError):
    """An artifact that is missing, or whose bytes no longer match its hash."""

    status_code = 500


class LeagueConfigError(LeagueError):
    """A league home, ``league.toml`` or database URL that cannot be used."""

    status_code = 400
