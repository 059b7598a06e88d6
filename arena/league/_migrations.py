"""Running the league's Alembic migrations (``arena/league/migrations``) from code.

The schema of a league database is made and changed only by these migrations, never by
``create_all``: the tests build their databases with :func:`upgrade` too, so every test run
exercises the migrations, and :func:`schema_drift` (``alembic check``'s comparison) proves
that the migrations and the models describe the same schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from arena.league._db import Base

__all__ = ["current_revision", "downgrade", "head_revision", "schema_drift", "upgrade"]

MIGRATIONS = Path(__file__).parent / "migrations"


def _config() -> Config:
    config = Config(MIGRATIONS / "alembic.ini")
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate ``engine``'s database up to ``revision`` (default: newest), in one transaction."""
    config = _config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Migrate ``engine``'s database down to ``revision`` (default: empty), in one transaction."""
    config = _config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def head_revision() -> str:
    """The newest migration's revision id: the schema this code expects."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None  # the initial migration exists
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database of ``engine`` is at, or None if it was never migrated."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def schema_drift(engine: Engine) -> list[Any]:
    """The differences between the database of ``engine`` and the models; empty when none."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))
