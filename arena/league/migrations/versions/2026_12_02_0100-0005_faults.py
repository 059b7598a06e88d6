"""Faults follow their cause: suspended versions, and void matches charged to the seat at fault.

Revision ID: 0005
Revises: 0004
Created: 2026-12-02 01:00:00 UTC

Expand only: a new status value (a wider CHECK), and two columns with server defaults, so
the previous code runs on the upgraded schema.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = ("uploaded", "building", "checking", "validating", "active", "retired", "rejected")
_AFTER = (*_BEFORE, "suspended")


def _status_check(values: Sequence[str]) -> str:
    return "status IN ({})".format(", ".join(f"'{v}'" for v in values))


def upgrade() -> None:
    """Allow ``suspended``; add ``match_seats.void_fault`` and ``version_stats.voids``."""
    with op.batch_alter_table("bot_versions") as batch:
        batch.drop_constraint(op.f("ck_bot_versions_version_status"), type_="check")
        batch.create_check_constraint(op.f("ck_bot_versions_version_status"), _status_check(_AFTER))
    with op.batch_alter_table("match_seats") as batch:
        batch.add_column(
            sa.Column("void_fault", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("version_stats") as batch:
        batch.add_column(sa.Column("voids", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    """Remove what :func:`upgrade` added; a suspended version becomes retired."""
    with op.batch_alter_table("version_stats") as batch:
        batch.drop_column("voids")
    with op.batch_alter_table("match_seats") as batch:
        batch.drop_column("void_fault")
    op.execute("UPDATE bot_versions SET status = 'retired' WHERE status = 'suspended'")
    with op.batch_alter_table("bot_versions") as batch:
        batch.drop_constraint(op.f("ck_bot_versions_version_status"), type_="check")
        batch.create_check_constraint(
            op.f("ck_bot_versions_version_status"), _status_check(_BEFORE)
        )
