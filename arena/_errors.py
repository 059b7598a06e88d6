"""Errors raised by the arena.

Hierarchy::

    ArenaError                  root of every error the arena raises
    ├── SandboxError            a sandbox could not start or reach a bot
    │   └── SandboxUnavailable  the requested kind of sandbox does not exist here (no Docker)
    ├── PlanError               ladder parameters that cannot be planned, or a --resume that
    │                           does not match the run it resumes
    ├── ResultsError            an output directory that cannot be read or written
    ├── BrokerUnavailable       the Celery fleet's broker does not answer (``arena run
    │                           --executor celery``)
    ├── BrokerRefused           a broker URL refused: not Redis, or no password for a
    │                           broker on another machine
    ├── ViewerError             a stored replay the web's viewer cannot show (also a
    │   │                       ValueError; ``arena/web/_viewer.py``)
    │   └── NoSuchHand          a hand the replay does not have
    └── LeagueError             400: a league request refused or failed; each subclass has
        │                       the HTTP ``status_code`` the API answers with
        ├── NotAuthenticated    401: no token, an unknown, revoked or expired token
        ├── Forbidden           403: a disabled account, or an action beyond one's role
        ├── NotFound            404: no such user, bot or version (or not yours to see)
        ├── Conflict            409: a name already taken, a league already there
        ├── SubmissionLimitExceeded  429: more submissions today than the league allows
        ├── UploadRejected      400: an upload that is malformed, too big or hostile
        ├── ArtifactError       500: an artifact missing, or its bytes not its hash
        └── LeagueConfigError   400: a league home or ``league.toml`` that cannot be used

A league error's message is one sentence meant for the person who made the request; the API
answers with its ``status_code`` and that message, the CLI prints it. They live here, not in
the league's package, because the league's client (``arena.client``) raises them too and
imports nothing of the server.

Bot misbehaviour during a match is not an exception: the match runner records it as a
:class:`arena.Fault` and plays on (see ``docs/arena.md``).
"""

from __future__ import annotations

__all__ = [
    "ArenaError",
    "ArtifactError",
    "BrokerRefused",
    "BrokerUnavailable",
    "Conflict",
    "Forbidden",
    "LeagueConfigError",
    "LeagueError",
    "NotAuthenticated",
    "NotFound",
    "PlanError",
    "ResultsError",
    "SandboxError",
    "SandboxUnavailable",
    "SubmissionLimitExceeded",
    "UploadRejected",
]


class ArenaError(Exception):
    """Root of every error raised by the arena."""


class SandboxError(ArenaError):
    """A sandbox could not start a bot or hand over its endpoint."""


class SandboxUnavailable(SandboxError):
    """The requested sandbox kind cannot run on this machine (e.g. no Docker engine answers)."""


class PlanError(ArenaError):
    """Ladder parameters that cannot be planned, or a resume that does not match its run."""


class ResultsError(ArenaError):
    """An output directory that cannot be read or written."""


class BrokerUnavailable(ArenaError):
    """The Celery fleet's broker does not answer."""


class BrokerRefused(ArenaError):
    """A Celery broker URL the arena will not use: not Redis, or open to anyone who reaches it."""


class LeagueError(ArenaError):
    """Root of the league's errors; ``status_code`` is the HTTP status the API answers with."""

    status_code: int = 400


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
