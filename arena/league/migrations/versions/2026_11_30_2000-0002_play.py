"""Play: validation leases, duplicate groups, counted results and per-version sums.

Revision ID: 0002
Revises: 0001
Created: 2026-11-30 20:00:00 UTC

Expand only: every new column has a server default or is nullable, so the previous code
still runs against the upgraded schema. Batch mode on SQLite (``env.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the columns and tables that scheduling, validation and counting results need."""
    with op.batch_alter_table("bot_versions") as batch:
        batch.add_column(
            sa.Column("activate", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch.add_column(sa.Column("lease_owner", sa.String(128), nullable=True))
        batch.add_column(sa.Column("lease_expires", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("reason", sa.Text(), nullable=False, server_default=""))
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("seed", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("group_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("rotation", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("result_seq", sa.Integer(), nullable=True))
        batch.create_index(op.f("ix_matches_group_id"), ["group_id"])
        batch.create_unique_constraint(op.f("uq_matches_result_seq"), ["result_seq"])
    with op.batch_alter_table("match_seats") as batch:
        batch.add_column(sa.Column("place", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("chips", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("luck", sa.Float(), nullable=True))
        batch.add_column(sa.Column("mu_after", sa.Float(), nullable=True))
        batch.add_column(sa.Column("sigma_after", sa.Float(), nullable=True))
    op.create_table(
        "version_stats",
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("first_places", sa.Integer(), nullable=False),
        sa.Column("place_sum", sa.Float(), nullable=False),
        sa.Column("place_sq_sum", sa.Float(), nullable=False),
        sa.Column("score_sum", sa.Float(), nullable=False),
        sa.Column("score_sq_sum", sa.Float(), nullable=False),
        sa.Column("adjusted_matches", sa.Integer(), nullable=False),
        sa.Column("adjusted_sum", sa.Float(), nullable=False),
        sa.Column("adjusted_sq_sum", sa.Float(), nullable=False),
        sa.Column("chips_sum", sa.BigInteger(), nullable=False),
        sa.Column("net_chips_sum", sa.BigInteger(), nullable=False),
        sa.Column("hands_sum", sa.BigInteger(), nullable=False),
        sa.Column("faults", sa.Integer(), nullable=False),
        sa.Column("last_played", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["bot_versions.id"],
            name=op.f("fk_version_stats_version_id_bot_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("version_id", name=op.f("pk_version_stats")),
    )
    op.create_table(
        "counters",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_counters")),
    )


def downgrade() -> None:
    """Remove what :func:`upgrade` added."""
    op.drop_table("counters")
    op.drop_table("version_stats")
    with op.batch_alter_table("match_seats") as batch:
        for column in ("sigma_after", "mu_after", "luck", "chips", "place"):
            batch.drop_column(column)
    with op.batch_alter_table("matches") as batch:
        batch.drop_constraint(op.f("uq_matches_result_seq"), type_="unique")
        batch.drop_index(op.f("ix_matches_group_id"))
        for column in ("result_seq", "rotation", "group_id", "seed"):
            batch.drop_column(column)
    with op.batch_alter_table("bot_versions") as batch:
        for column in ("reason", "lease_expires", "lease_owner", "activate"):
            batch.drop_column(column)
