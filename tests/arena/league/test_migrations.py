import pytest
from sqlalchemy import Engine, inspect, text

from arena.league import (
    Base,
    current_revision,
    downgrade,
    head_revision,
    schema_drift,
    upgrade,
)


def test_upgrade_from_empty_gives_the_models_schema(empty_engine: Engine) -> None:
    """`alembic upgrade head` on an empty database makes exactly the models' tables and columns."""
    upgrade(empty_engine)
    assert [] == schema_drift(empty_engine)
    assert head_revision() == current_revision(empty_engine)


def test_upgrade_makes_the_models_check_constraints(empty_engine: Engine) -> None:
    """The enum CHECK constraints carry the names the models give them (schema_drift skips them)."""
    upgrade(empty_engine)
    inspector = inspect(empty_engine)
    for table in Base.metadata.sorted_tables:
        expected = sorted(
            str(c.name)
            for c in table.constraints
            if c.__class__.__name__ == "CheckConstraint" and c.name
        )
        actual = sorted(str(c["name"]) for c in inspector.get_check_constraints(table.name))
        assert expected == actual, table.name


def test_downgrade_to_base_removes_every_table(empty_engine: Engine) -> None:
    """Downgrading to base leaves only Alembic's own table, at no revision."""
    upgrade(empty_engine)
    downgrade(empty_engine)
    assert ["alembic_version"] == inspect(empty_engine).get_table_names()
    assert current_revision(empty_engine) is None


def test_upgrade_after_downgrade_gives_the_same_schema(empty_engine: Engine) -> None:
    """Down and up again is a clean round trip."""
    upgrade(empty_engine)
    downgrade(empty_engine)
    upgrade(empty_engine)
    assert [] == schema_drift(empty_engine)


def test_sqlite_runs_in_wal_mode_with_foreign_keys(empty_engine: Engine, kind: str) -> None:
    """A league's SQLite file is in WAL mode and enforces foreign keys."""
    if kind != "sqlite":
        pytest.skip("SQLite pragmas")
    with empty_engine.connect() as connection:
        assert "wal" == connection.execute(text("PRAGMA journal_mode")).scalar()
        assert 1 == connection.execute(text("PRAGMA foreign_keys")).scalar()
