"""Seasons: their entries, and the matches of their finals.

Revision ID: 0007
Revises: 0006
Created: 2026-12-05 14:00:00 UTC

Expand only: two new tables, a nullable ``matches.season_id`` and a new value of
``matches.kind`` (a wider CHECK), so the previous code runs on the upgraded schema.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = ("rated", "challenge")
_AFTER = (*_BEFORE, "final")


def _kind_check(values: Sequence[str]) -> str:
    return "kind IN ({})".format(", ".join(f"'{v}'" for v in values))


def upgrade() -> None:
    """Add ``seasons``, ``season_entries``, ``matches.season_id``; allow ``final`` matches."""
    op.create_table(
        "seasons",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "open",
                "frozen",
                "final",
                "closed",
                name="season_status",
                native_enum=False,
                length=16,
                create_constraint=True,
            ),
            nullable=False,
        ),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("frozen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("final_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("table_size", sa.Integer(), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("top", sa.Integer(), nullable=False),
        sa.Column("alpha", sa.Float(), nullable=False),
        sa.Column("looks", sa.Integer(), nullable=False),
        sa.Column("plan_seed", sa.Integer(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("decision", sa.String(length=200), nullable=False),
        sa.Column("record", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seasons")),
        sa.UniqueConstraint("name", name=op.f("uq_seasons_name")),
    )
    op.create_table(
        "season_entries",
        sa.Column("season_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["season_id"],
            ["seasons.id"],
            name=op.f("fk_season_entries_season_id_seasons"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["bot_versions.id"],
            name=op.f("fk_season_entries_version_id_bot_versions"),
        ),
        sa.PrimaryKeyConstraint("season_id", "version_id", name=op.f("pk_season_entries")),
    )
    op.create_index(
        op.f("ix_season_entries_version_id"), "season_entries", ["version_id"], unique=False
    )
    with op.batch_alter_table("matches") as batch:
        batch.drop_constraint(op.f("ck_matches_match_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_matches_match_kind"), _kind_check(_AFTER))
        batch.add_column(sa.Column("season_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            op.f("fk_matches_season_id_seasons"), "seasons", ["season_id"], ["id"]
        )
        batch.create_index(op.f("ix_matches_season_id"), ["season_id"], unique=False)


def downgrade() -> None:
    """Remove what :func:`upgrade` added; a final's matches become challenges' rows."""
    op.execute("UPDATE matches SET kind = 'challenge' WHERE kind = 'final'")
    with op.batch_alter_table("matches") as batch:
        batch.drop_index(op.f("ix_matches_season_id"))
        batch.drop_constraint(op.f("fk_matches_season_id_seasons"), type_="foreignkey")
        batch.drop_column("season_id")
        batch.drop_constraint(op.f("ck_matches_match_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_matches_match_kind"), _kind_check(_BEFORE))
    op.drop_index(op.f("ix_season_entries_version_id"), table_name="season_entries")
    op.drop_table("season_entries")
    op.drop_table("seasons")
