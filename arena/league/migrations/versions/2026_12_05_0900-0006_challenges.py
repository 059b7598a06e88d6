"""Challenges: a match's kind (rated, or a challenge an owner asked for) and who asked.

Revision ID: 0006
Revises: 0005
Created: 2026-12-05 09:00:00 UTC

Expand only: two columns, ``kind`` with a server default of ``rated`` (every match so far),
so the previous code runs on the upgraded schema.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add ``matches.kind`` (``rated`` or ``challenge``) and ``matches.requested_by``."""
    with op.batch_alter_table("matches") as batch:
        batch.add_column(
            sa.Column(
                "kind",
                sa.Enum(
                    "rated",
                    "challenge",
                    name="match_kind",
                    native_enum=False,
                    length=16,
                    create_constraint=True,
                ),
                nullable=False,
                server_default="rated",
            )
        )
        batch.add_column(sa.Column("requested_by", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            op.f("fk_matches_requested_by_users"), "users", ["requested_by"], ["id"]
        )
        batch.create_index(op.f("ix_matches_requested_by"), ["requested_by"], unique=False)


def downgrade() -> None:
    """Remove what :func:`upgrade` added; challenges become rated matches' rows."""
    with op.batch_alter_table("matches") as batch:
        batch.drop_index(op.f("ix_matches_requested_by"))
        batch.drop_constraint(op.f("fk_matches_requested_by_users"), type_="foreignkey")
        batch.drop_column("requested_by")
        batch.drop_constraint(op.f("ck_matches_match_kind"), type_="check")
        batch.drop_column("kind")
