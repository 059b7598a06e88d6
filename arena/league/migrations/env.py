"""Alembic's entry point for the league's migrations.

The arena passes an open connection in ``config.attributes["connection"]``
(``arena/league/_migrations.py``); the ``alembic`` command line passes a URL with
``-x db=URL``. SQLite tables are altered in batch mode ("move and copy"), since SQLite's
ALTER TABLE cannot change or drop constraints; on PostgreSQL a migration waits at most 4 s
for a lock and 5 s for a statement, so it never stalls a running league for long.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

import arena.league  # noqa: F401  (registers every table on Base.metadata)
from arena.league._db import Base, connect

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("SET LOCAL lock_timeout = '4s'")
            connection.exec_driver_sql("SET LOCAL statement_timeout = '5s'")
        context.run_migrations()


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("db")
    if not url:
        raise SystemExit("give the database as: alembic -x db=URL …")
    return url


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
    else:
        engine = connect(_url())
        try:
            with engine.begin() as connection:
                _run(connection)
        finally:
            engine.dispose()
