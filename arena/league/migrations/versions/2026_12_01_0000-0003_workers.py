"""Workers: the machines of a Celery fleet and their tokens' keyed hashes.

Revision ID: 0003
Revises: 0002
Created: 2026-12-01 00:00:00 UTC

Expand only: a new table, which the previous code never reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the ``workers`` table."""
    op.create_table(
        "workers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("token_hash", sa.CHAR(64), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workers")),
        sa.UniqueConstraint("name", name=op.f("uq_workers_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_workers_token_hash")),
    )


def downgrade() -> None:
    """Remove what :func:`upgrade` added."""
    op.drop_table("workers")
