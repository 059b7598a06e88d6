"""Sessions: a per-user count of sign-outs, so that signing out ends a web session.

Revision ID: 0004
Revises: 0003
Created: 2026-12-02 00:00:00 UTC

Expand only: the new column has a server default (0), so the previous code still runs
against the upgraded schema; its sessions carry no epoch and are taken as made under 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add ``users.session_epoch``."""
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("session_epoch", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    """Remove what :func:`upgrade` added."""
    with op.batch_alter_table("users") as batch:
        batch.drop_column("session_epoch")
