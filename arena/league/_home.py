"""A league home: the directory ``arena league init`` makes and every league command opens.

Layout (the directory is private to its owner, mode 0700)::

    league.toml    the configuration (mode 0600: it may hold a database password)
    secret.key     32 random bytes (hex, mode 0600): the key of the API tokens' hashes
    league.db      the SQLite database (with -wal and -shm files), unless
                   league.toml names a PostgreSQL database
    artifacts/     the content-addressed artifact store

``league.toml``::

    [league]
    name = "myleague"
    submissions_per_day = 10
    # database = "postgresql://arena@dbhost/league"   # default: league.db here

    [uploads]                                          # each optional: UploadLimits
    max_compressed_bytes = 16777216
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, inspect
from sqlalchemy.orm import Session, sessionmaker

from arena._errors import Conflict, LeagueConfigError
from arena.client._pack import UploadLimits
from arena.league._artifacts import DirectoryStore
from arena.league._db import connect, sessions, sqlite_url, unit_of_work
from arena.league._migrations import current_revision, head_revision, upgrade
from arena.league.accounts._accounts import IssuedToken, Role, create_user, issue_token
from arena.league.accounts._submissions import DEFAULT_SUBMISSIONS_PER_DAY

__all__ = [
    "CONFIG_FILE",
    "ChallengeLimits",
    "FaultLimits",
    "League",
    "LeagueConfig",
    "init_league",
    "open_league",
]

CONFIG_FILE = "league.toml"
KEY_FILE = "secret.key"
DATABASE_FILE = "league.db"
ARTIFACTS_DIR = "artifacts"


@dataclass(frozen=True, slots=True)
class FaultLimits:
    """When a version is suspended for the void matches it causes (``league.toml``, ``[faults]``).

    Attributes:
        suspend_after: void matches it caused that suspend it, ...
        window: ... among its latest this many finished matches.
    """

    suspend_after: int = 3
    window: int = 10


@dataclass(frozen=True, slots=True)
class ChallengeLimits:
    """How many challenges an owner may ask for (``league.toml``, ``[challenges]``).

    Attributes:
        per_day: challenges one user may ask for per UTC day.
        at_once: challenges of one user queued or running at a time.
    """

    per_day: int = 10
    at_once: int = 1


@dataclass(frozen=True, slots=True)
class LeagueConfig:
    """A league's settings, from ``league.toml``.

    Attributes:
        name: the league's name, shown to its users.
        database: a PostgreSQL URL, or "" for ``league.db`` in the league home.
        submissions_per_day: how many submissions a user may make per UTC day.
        uploads: what an upload may be.
        faults: when a version that makes matches void by never starting is suspended.
        challenges: how many challenges an owner may ask for.
    """

    name: str
    database: str = ""
    submissions_per_day: int = DEFAULT_SUBMISSIONS_PER_DAY
    uploads: UploadLimits = field(default_factory=UploadLimits)
    faults: FaultLimits = field(default_factory=FaultLimits)
    challenges: ChallengeLimits = field(default_factory=ChallengeLimits)

    def to_toml(self) -> str:
        """The ``league.toml`` that reads back as this configuration."""
        lines = [
            "# A Flip Flop Arena league home, made by `arena league init` (docs/league.md).",
            "[league]",
            f"name = {_toml_str(self.name)}",
            f"submissions_per_day = {self.submissions_per_day}",
        ]
        if self.database:
            lines.append(f"database = {_toml_str(self.database)}")
        else:
            lines.append('# database = "postgresql://user@host/dbname"  # default: league.db here')
        lines += ["", "[uploads]", *_toml_fields(self.uploads)]
        lines += [
            "",
            "# A version that makes suspend_after of its latest window matches void (by never",
            "# starting in them) is suspended (docs/league.md).",
            "[faults]",
            *_toml_fields(self.faults),
        ]
        lines += [
            "",
            "# Unrated matches an owner asks for against bots of their choice (docs/league.md):",
            "# per_day per user and UTC day, at_once queued or running.",
            "[challenges]",
            *_toml_fields(self.challenges),
        ]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str, source: str) -> LeagueConfig:
        """Read ``league.toml``'s text; ``source`` names it in errors.

        Raises:
            LeagueConfigError: not TOML, an unknown key, or a value of the wrong kind.
        """
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise LeagueConfigError(f"{source}: not valid TOML ({e})") from e
        league = _table(data, "league", source)
        uploads = _table(data, "uploads", source)
        faults = _table(data, "faults", source)
        challenges = _table(data, "challenges", source)
        _only(data, {"league", "uploads", "faults", "challenges"}, source, "")
        _only(league, {"name", "database", "submissions_per_day"}, source, "league.")
        _only(uploads, {f.name for f in fields(UploadLimits)}, source, "uploads.")
        _only(faults, {f.name for f in fields(FaultLimits)}, source, "faults.")
        _only(challenges, {f.name for f in fields(ChallengeLimits)}, source, "challenges.")
        name = league.get("name")
        if not isinstance(name, str) or not name:
            raise LeagueConfigError(f"{source}: league.name must be a non-empty string")
        database = league.get("database", "")
        if not isinstance(database, str):
            raise LeagueConfigError(f"{source}: league.database must be a string (a URL)")
        per_day = _positive(league, "submissions_per_day", DEFAULT_SUBMISSIONS_PER_DAY, source)
        return cls(
            name,
            database,
            per_day,
            _positives(UploadLimits, uploads, source),
            _positives(FaultLimits, faults, source),
            _positives(ChallengeLimits, challenges, source),
        )


@dataclass(frozen=True, slots=True)
class League:
    """An open league home: its configuration, database and artifact store.

    Attributes:
        home: the league home directory.
        config: its ``league.toml``.
        key: the secret key of the API tokens' hashes.
        engine: the database engine (call :meth:`close` when done).
        sessions: the session factory, for :func:`arena.league.unit_of_work`.
        artifacts: the artifact store.
    """

    home: Path
    config: LeagueConfig
    key: bytes
    engine: Engine
    sessions: sessionmaker[Session]
    artifacts: DirectoryStore

    def close(self) -> None:
        """Close the database's connections."""
        self.engine.dispose()


def init_league(
    home: Path,
    *,
    name: str | None = None,
    admin: str = "admin",
    database: str = "",
    now: dt.datetime | None = None,
) -> tuple[League, IssuedToken]:
    """Make a league home at ``home`` with its first user, an admin; return it and their token.

    ``home`` must not exist or be an empty directory; a PostgreSQL ``database`` must hold
    no league yet. Whatever this made is removed again if a step fails.

    Raises:
        Conflict: ``home`` is not empty, or ``database`` already holds a league.
        LeagueConfigError: ``database`` is not a usable URL.
        LeagueError: ``admin`` is not a valid user name.
    """
    home = home.absolute()
    if home.exists() and (not home.is_dir() or any(home.iterdir())):
        raise Conflict(f"{home} exists and is not an empty directory: no league made there")
    made = not home.exists()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)
    config = LeagueConfig(name=name or home.name, database=database)
    engine: Engine | None = None
    try:
        _write_private(home / KEY_FILE, secrets.token_hex(32) + "\n")
        _write_private(home / CONFIG_FILE, config.to_toml())
        engine = connect(_database_url(home, config))
        if inspect(engine).get_table_names():
            raise Conflict(f"the database {engine.url!r} is not empty: no league made in it")
        upgrade(engine)
        league = League(
            home,
            config,
            _read_key(home),
            engine,
            sessions(engine),
            DirectoryStore(home / ARTIFACTS_DIR),
        )
        with unit_of_work(league.sessions) as session:
            create_user(session, admin, role=Role.ADMIN, now=now)
            token = issue_token(session, league.key, admin, now=now)
    except BaseException:
        if engine is not None:
            engine.dispose()
        if made:
            shutil.rmtree(home, ignore_errors=True)
        else:
            for child in home.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    return league, token


def open_league(home: Path) -> League:
    """Open the league home at ``home``.

    Raises:
        LeagueConfigError: ``home`` is no league home, its configuration or key cannot be
            read, or its database is not at the schema this arena expects.
    """
    home = home.absolute()
    config_file = home / CONFIG_FILE
    if not config_file.is_file():
        raise LeagueConfigError(
            f"{home} is not a league home: it has no {CONFIG_FILE}"
            " (make one with `arena league init DIR`)"
        )
    config = LeagueConfig.parse(config_file.read_text(encoding="utf-8"), str(config_file))
    key = _read_key(home)
    engine = connect(_database_url(home, config))
    try:
        revision, head = current_revision(engine), head_revision()
    except BaseException:
        engine.dispose()
        raise
    if revision != head:
        engine.dispose()
        raise LeagueConfigError(
            f"the league database is at schema revision {revision}; this arena expects {head}"
        )
    return League(home, config, key, engine, sessions(engine), DirectoryStore(home / ARTIFACTS_DIR))


def _database_url(home: Path, config: LeagueConfig) -> str:
    return config.database or sqlite_url(home / DATABASE_FILE)


def _read_key(home: Path) -> bytes:
    path = home / KEY_FILE
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError) as e:
        raise LeagueConfigError(f"{path}: cannot read the league's secret key ({e})") from e
    if len(key) < 32:
        raise LeagueConfigError(f"{path}: the league's secret key must be 32 bytes or more")
    return key


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` (it must not exist) readable by its owner only, with ``text``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _toml_str(value: str) -> str:
    # A JSON string with only ASCII in it is also a TOML basic string.
    return json.dumps(value, ensure_ascii=True)


def _table(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise LeagueConfigError(f"{source}: [{key}] must be a table")
    return table


def _only(table: dict[str, Any], allowed: set[str], source: str, prefix: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise LeagueConfigError(
            f"{source}: unknown setting {prefix}{unknown[0]} (known: {', '.join(sorted(allowed))})"
        )


_Limits = TypeVar("_Limits", UploadLimits, FaultLimits, ChallengeLimits)


def _positives(kind: type[_Limits], table: dict[str, Any], source: str) -> _Limits:
    """``kind`` (a dataclass of whole numbers) from ``table``, its defaults where it is silent."""
    defaults = kind()
    return kind(
        **{
            f.name: _positive(table, f.name, getattr(defaults, f.name), source)
            for f in fields(kind)
        }
    )


def _toml_fields(limits: UploadLimits | FaultLimits | ChallengeLimits) -> list[str]:
    """``name = value`` for each field of ``limits``, as a TOML table's lines."""
    return [f"{f.name} = {getattr(limits, f.name)}" for f in fields(limits)]


def _positive(table: dict[str, Any], key: str, default: int, source: str) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise LeagueConfigError(f"{source}: {key} must be a whole number of 1 or more")
    return value
