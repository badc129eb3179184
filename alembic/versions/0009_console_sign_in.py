"""Console sign-in (issue 35 item 5, ADR 052): admin_users and admin_sessions.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28 02:30:00

Written by hand to match metrics/sqlstore/admin_models.py (tests/unit/test_store_migrations.py
compares the migrated schema with the models). Users keep an argon2id hash, never a password;
sessions keep the SHA-256 of their cookie, never the cookie.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
ROLES = "role IN ('viewer', 'operator', 'admin')"


def upgrade() -> None:
    op.create_table(
        "admin_users",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=True),
        sa.Column("password_changed_at", UTC_DATETIME, nullable=False),
        sa.Column("last_sign_in_at", UTC_DATETIME, nullable=True),
        sa.Column("failed_count", sa.Integer(), nullable=False),
        sa.Column("failed_since", UTC_DATETIME, nullable=True),
        sa.Column("locked_until", UTC_DATETIME, nullable=True),
        sa.CheckConstraint(ROLES, name=op.f("ck_admin_users_role")),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_admin_users")),
    )
    op.create_table(
        "admin_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("public_id", sa.String(length=32), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("via", sa.String(length=16), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("last_seen_at", UTC_DATETIME, nullable=False),
        sa.Column("expires_at", UTC_DATETIME, nullable=False),
        sa.CheckConstraint(ROLES, name=op.f("ck_admin_sessions_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_sessions")),
        sa.UniqueConstraint("public_id", name=op.f("uq_admin_sessions_public_id")),
    )
    op.create_index(
        op.f("ix_admin_sessions_user_name"), "admin_sessions", ["user_name"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_admin_sessions_user_name"), table_name="admin_sessions")
    op.drop_table("admin_sessions")
    op.drop_table("admin_users")
