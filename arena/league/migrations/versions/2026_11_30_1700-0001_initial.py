"""The league's first schema: users, tokens, bots, versions, validation, matches, submissions.

Revision ID: 0001
Revises:
Created: 2026-11-30 17:00:00 UTC

Written to match the models (``tests/arena/league/test_migrations.py`` checks that an upgraded
database has exactly their schema). Like every migration it stands alone: enum values and
constraint names are spelt out here, never imported from the code that may change later.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _when(name: str, *, nullable: bool = False) -> sa.Column[dt.datetime]:
    """A timestamp column, stored with its time zone (UTC)."""
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _enum(
    table: str, column: str, name: str, values: Sequence[str], *, nullable: bool
) -> tuple[sa.Column[str], sa.CheckConstraint]:
    """A VARCHAR column limited to ``values`` by a named CHECK constraint (as the models)."""
    allowed = ", ".join(f"'{v}'" for v in values)
    return (
        sa.Column(column, sa.String(16), nullable=nullable),
        sa.CheckConstraint(f"{column} IN ({allowed})", name=op.f(f"ck_{table}_{name}")),
    )


def upgrade() -> None:
    """Create every table."""
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(40), nullable=False),
        *_enum("users", "role", "role", ["admin", "user"], nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        _when("created"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.CHAR(64), nullable=False),
        _when("created"),
        _when("expires_at", nullable=True),
        _when("last_used_at", nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_index(op.f("ix_api_tokens_user_id"), "api_tokens", ["user_id"])
    op.create_table(
        "submission_counts",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_submission_counts_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "day", name=op.f("pk_submission_counts")),
    )
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        _when("created"),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], name=op.f("fk_bots_owner_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bots")),
        sa.UniqueConstraint("name", name=op.f("uq_bots_name")),
    )
    op.create_index(op.f("ix_bots_owner_id"), "bots", ["owner_id"])
    op.create_table(
        "bot_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        *_enum(
            "bot_versions",
            "status",
            "version_status",
            [
                "uploaded",
                "building",
                "checking",
                "validating",
                "active",
                "retired",
                "rejected",
            ],
            nullable=False,
        ),
        sa.Column("source_sha256", sa.CHAR(64), nullable=False),
        _when("created"),
        sa.Column("rating_mu", sa.Float(), nullable=False),
        sa.Column("rating_sigma", sa.Float(), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_bot_versions_bot_id_bots")),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["bot_versions.id"], name=op.f("fk_bot_versions_parent_id_bot_versions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bot_versions")),
        sa.UniqueConstraint("bot_id", "number", name=op.f("uq_bot_versions_bot_id_number")),
        sa.UniqueConstraint(
            "bot_id", "source_sha256", name=op.f("uq_bot_versions_bot_id_source_sha256")
        ),
    )
    op.create_index(op.f("ix_bot_versions_bot_id"), "bot_versions", ["bot_id"])
    # At most one active version per bot, enforced by the database itself.
    op.create_index(
        "uq_bot_versions_one_active",
        "bot_versions",
        ["bot_id"],
        unique=True,
        sqlite_where=sa.text("status = 'active'"),
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_table(
        "validation_steps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        *_enum(
            "validation_steps", "step", "step_kind", ["build", "check", "match"], nullable=False
        ),
        *_enum(
            "validation_steps",
            "outcome",
            "step_outcome",
            ["passed", "failed", "error"],
            nullable=True,
        ),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("log_sha256", sa.CHAR(64), nullable=True),
        _when("started"),
        _when("finished", nullable=True),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["bot_versions.id"],
            name=op.f("fk_validation_steps_version_id_bot_versions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_validation_steps")),
        sa.UniqueConstraint("version_id", "step", name=op.f("uq_validation_steps_version_id_step")),
    )
    op.create_index(op.f("ix_validation_steps_version_id"), "validation_steps", ["version_id"])
    op.create_table(
        "matches",
        sa.Column("id", sa.Integer(), nullable=False),
        *_enum(
            "matches", "status", "match_status", ["queued", "running", "finished"], nullable=False
        ),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        _when("lease_expires", nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _when("created"),
        _when("finished_at", nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("replay_sha256", sa.CHAR(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matches")),
    )
    op.create_index("ix_matches_status_lease_expires", "matches", ["status", "lease_expires"])
    op.create_table(
        "match_seats",
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_id"],
            ["matches.id"],
            name=op.f("fk_match_seats_match_id_matches"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["version_id"], ["bot_versions.id"], name=op.f("fk_match_seats_version_id_bot_versions")
        ),
        sa.PrimaryKeyConstraint("match_id", "seat", name=op.f("pk_match_seats")),
    )
    op.create_index(op.f("ix_match_seats_version_id"), "match_seats", ["version_id"])


def downgrade() -> None:
    """Drop every table, dependents first."""
    for table in (
        "match_seats",
        "matches",
        "validation_steps",
        "bot_versions",
        "bots",
        "submission_counts",
        "api_tokens",
        "users",
    ):
        op.drop_table(table)
