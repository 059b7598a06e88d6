"""Databases for the league's tests: SQLite always, PostgreSQL when one is given.

Every test that takes ``session`` or ``engine`` runs once per database kind. Their schema
comes from the migrations (``alembic upgrade head``), never from ``create_all``.

- SQLite: a file in the test's temporary directory, WAL mode, as a league home has it.
- PostgreSQL: ``ARENA_TEST_POSTGRES`` is the URL of a server and database whose user may
  create databases (``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``); each
  fixture makes its own database there and drops it afterwards. Unset, the PostgreSQL
  runs skip, unless ``ARENA_REQUIRE_POSTGRES=1`` (CI), where they fail.

``session`` is a session in one outer transaction that is rolled back after the test
(services' commits become savepoints), so tests share one migrated database per kind
without seeing each other's rows. Tests of concurrency, which need several connections
to see each other's commits, take ``engine``: a freshly migrated database of their own.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.orm import Session

from arena.league import (
    BotVersion,
    Role,
    VersionStatus,
    connect,
    create_bot,
    create_user,
    sqlite_url,
    upgrade,
)

POSTGRES_URL = "ARENA_TEST_POSTGRES"
REQUIRE_POSTGRES = "ARENA_REQUIRE_POSTGRES"
KINDS = ["sqlite", "postgresql"]
NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
"""A fixed time for tests that depend on the clock."""


def _postgres_url() -> str:
    url = os.environ.get(POSTGRES_URL, "")
    if url:
        return url
    if os.environ.get(REQUIRE_POSTGRES) == "1":
        pytest.fail(f"{REQUIRE_POSTGRES}=1 but {POSTGRES_URL} is not set")
    pytest.skip(f"PostgreSQL tests need {POSTGRES_URL}=postgresql+psycopg://USER@HOST/DB")


@contextmanager
def fresh_database(kind: str, directory: Path) -> Iterator[Engine]:
    """An engine on a new, empty database of ``kind``, removed afterwards."""
    if kind == "sqlite":
        engine = connect(sqlite_url(directory / "league.db"))
        try:
            yield engine
        finally:
            engine.dispose()
        return
    server = make_url(_postgres_url())
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    name = f"arena_test_{secrets.token_hex(6)}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine = connect(server.set(database=name).render_as_string(hide_password=False))
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session", params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    """The database kind a test runs on: ``sqlite`` or ``postgresql``."""
    value: str = request.param
    if value == "postgresql":
        _postgres_url()
    return value


@pytest.fixture(scope="session")
def migrated(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One database per kind for the whole run, migrated to head."""
    with fresh_database(kind, tmp_path_factory.mktemp(f"db-{kind}")) as engine:
        upgrade(engine)
        yield engine


@pytest.fixture
def session(migrated: Engine) -> Iterator[Session]:
    """A session whose every change is rolled back after the test."""
    connection = migrated.connect()
    outer = connection.begin()
    db = Session(bind=connection, join_transaction_mode="create_savepoint")
    try:
        yield db
    finally:
        db.close()
        outer.rollback()
        connection.close()


@pytest.fixture
def empty_engine(kind: str, tmp_path: Path) -> Iterator[Engine]:
    """A new, empty database of this kind for this test alone (no migrations run)."""
    with fresh_database(kind, tmp_path) as engine:
        yield engine


@pytest.fixture
def engine(empty_engine: Engine) -> Engine:
    """A new database of this kind for this test alone, migrated to head."""
    upgrade(empty_engine)
    return empty_engine


MakeVersions = Callable[[Session, int], list[int]]


@pytest.fixture
def make_versions() -> MakeVersions:
    """Make ``n`` active bot versions (one bot each, owned by one user); return their ids."""

    def make(session: Session, n: int) -> list[int]:
        owner = f"owner{secrets.token_hex(3)}"
        create_user(session, owner, role=Role.USER, now=NOW)
        ids = []
        for i in range(n):
            bot = create_bot(session, owner, f"{owner}-bot{i}", now=NOW)
            version = BotVersion(
                bot_id=bot.id,
                number=1,
                status=VersionStatus.ACTIVE,
                source_sha256=f"{i:064x}",
                created=NOW,
                rating_mu=25.0,
                rating_sigma=25.0 / 3,
                parent_id=None,
            )
            session.add(version)
            session.flush()
            ids.append(version.id)
        return ids

    return make
