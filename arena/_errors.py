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
    └── LeagueError             a league request refused or failed; its subclasses, each
                                with an HTTP ``status_code``, are in ``arena/league/_errors.py``

Bot misbehaviour during a match is not an exception: the match runner records it as a
:class:`arena.Fault` and plays on (see ``docs/arena.md``).
"""

from __future__ import annotations

__all__ = [
    "ArenaError",
    "BrokerRefused",
    "BrokerUnavailable",
    "LeagueError",
    "PlanError",
    "ResultsError",
    "SandboxError",
    "SandboxUnavailable",
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
