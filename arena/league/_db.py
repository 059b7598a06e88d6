"""The league's database: engine, sessions, the declarative base and one transaction per use case.

SQLite (a file in the league home, WAL mode) is the default; PostgreSQL is reached by URL.
The schema is made only by the Alembic migrations in ``arena/league/migrations``; the
models here are what those migrations must produce (``tests/arena/league/test_migrations.py``).

Services take a :class:`~sqlalchemy.orm.Session` and only ``flush()``; whoever runs the use
case (a CLI command, later a request or a task) opens :func:`unit_of_work`, which commits on
success and rolls back on error, so one use case is one transaction. A use case that only
reads (a page, a ``GET``) opens :func:`read_only` instead: on SQLite it never waits for a
writer (a deferred transaction in WAL mode reads the last committed state), and on either
database it cannot write.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlalchemy import DateTime, Engine, MetaData, create_engine, event, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import TypeDecorator

from arena._errors import LeagueConfigError

__all__ = [
    "MAX_INTEGER",
    "MIN_INTEGER",
    "READ_ONLY_OPTION",
    "Base",
    "UtcDateTime",
    "connect",
    "enum_values",
    "insert_ignore",
    "read_only",
    "sessions",
    "sqlite_url",
    "unit_of_work",
    "utcnow",
]

# Named constraints: Alembic can then alter and drop them, and SQLite's batch mode ("move
# and copy") can rebuild a table with its constraints intact.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

MAX_INTEGER = 2**63 - 1
"""The largest integer either database stores (SQLite's INTEGER, PostgreSQL's BIGINT).

An id or number from a request past it cannot name anything, and SQLite refuses to even
compare with it (``OverflowError``): requests are refused at the edge instead (400)."""
MIN_INTEGER = -(2**63)
"""The smallest integer either database stores."""

# How long a connection waits for another writer before SQLite gives up (SQLITE_BUSY).
SQLITE_BUSY_TIMEOUT_MS = 10_000
# The execution option that marks a read-only unit of work's connection (``read_only``).
READ_ONLY_OPTION = "arena_read_only"


class Base(DeclarativeBase):
    """The declarative base of every league table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return dt.datetime.now(dt.UTC)


class UtcDateTime(TypeDecorator[dt.datetime]):
    """A timestamp stored in UTC and always read back timezone-aware.

    PostgreSQL keeps ``timestamp with time zone``; SQLite has no time zones and would hand
    back naive values, so they are stored converted to UTC and marked UTC when read.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> Any:
        """Refuse naive datetimes (their zone is a guess); store the value in UTC."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the league stores aware UTC times")
        return value.astimezone(dt.UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        """Mark values SQLite returns without a zone as UTC."""
        if value is None:
            return None
        assert isinstance(value, dt.datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of the SQLite database file at ``path``."""
    return f"sqlite+pysqlite:///{path.resolve()}"


def connect(url: str, *, echo: bool = False) -> Engine:
    """An engine for a league database.

    ``postgresql://`` URLs use psycopg 3. SQLite files are put in WAL mode (readers never
    wait for the writer), with foreign keys enforced, a busy timeout and synchronous=FULL:
    a committed match result must survive a power cut, or it could be played twice.

    Args:
        url: a SQLAlchemy database URL (``sqlite+pysqlite:///…``, ``postgresql://…``).
        echo: log every statement (debugging).

    Raises:
        LeagueConfigError: the URL cannot be parsed or names another kind of database.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as e:
        raise LeagueConfigError(f"not a database URL: {url!r}") from e
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, echo=echo, pool_pre_ping=True)
    if backend != "sqlite":
        raise LeagueConfigError(
            f"the league runs on SQLite or PostgreSQL, not {backend!r} ({parsed!r})"
        )
    if parsed.database in (None, "", ":memory:"):
        raise LeagueConfigError("the league's SQLite database must be a file")
    engine = create_engine(parsed, echo=echo)
    _sqlite_transactions(engine)
    return engine


def _sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not the sqlite3 module, start transactions, and set the pragmas.

    Python's sqlite3 module opens transactions lazily on its own, which breaks SAVEPOINT
    and makes the first read of a transaction run outside it; SQLAlchemy documents this
    recipe (autocommit in the driver, an explicit BEGIN on every transaction). Rails has
    made IMMEDIATE transactions its SQLite default for the reason given below.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = FULL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        if connection.get_execution_options().get(READ_ONLY_OPTION):
            # A reader takes no lock: in WAL mode it sees the last committed state and never
            # waits for the writer, however long the writer's transaction (issue 24, finding 2).
            connection.exec_driver_sql("BEGIN DEFERRED")
            return
        # IMMEDIATE takes the write lock at the start, waiting up to the busy timeout. A
        # deferred transaction that reads and then writes cannot wait: SQLite refuses its
        # upgrade at once ("database is locked") if another writer went first. Writing
        # transactions of one league file are therefore serialised; readers are not.
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def sessions(engine: Engine) -> sessionmaker[Session]:
    """The session factory for ``engine``.

    Objects stay readable after a commit (``expire_on_commit=False``): a use case returns
    values built from them after its unit of work has ended.
    """
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def unit_of_work(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One use case, one transaction: commit if the block succeeds, roll back if it raises.

    Example::

        with unit_of_work(factory) as session:
            create_user(session, "alice")
    """
    with factory() as session, session.begin():
        yield session


@contextmanager
def read_only(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A use case that only reads: one transaction that takes no write lock and cannot write.

    On SQLite the transaction is deferred, so it never queues behind a writer (WAL mode: it
    reads the last committed state); on PostgreSQL it is ``READ ONLY``. A flush of any change
    raises, on both.

    Example::

        with read_only(league.sessions) as session:
            rows = leaderboard(session)
    """
    bind = factory.kw["bind"]
    with factory(bind=bind.execution_options(**{READ_ONLY_OPTION: True})) as session:
        event.listen(session, "before_flush", _refuse_flush)
        with session.begin():
            if bind.dialect.name == "postgresql":
                session.execute(text("SET TRANSACTION READ ONLY"))
            yield session


def _refuse_flush(session: Session, flush_context: Any, instances: Any) -> None:
    if session.new or session.dirty or session.deleted:
        raise RuntimeError("a read-only unit of work tried to write (use unit_of_work)")


def enum_values(members: type[StrEnum]) -> list[str]:
    """What an enum column stores: each member's value (``"admin"``), not its name."""
    return [m.value for m in members]


def insert_ignore(session: Session, model: type[Base], values: dict[str, Any]) -> int:
    """``INSERT … ON CONFLICT DO NOTHING`` one row of ``model``; return 1 if it went in, else 0.

    Both SQLite and PostgreSQL have it; it makes a row that may already exist without a
    read-then-write race (another transaction may insert it in between).
    """
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    result = session.execute(insert(model).values(values).on_conflict_do_nothing())
    return int(getattr(result, "rowcount", 0) or 0)
