"""Admin API: admin_members, admin_tokens, admin_audit.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 18:00:00

Written by hand to match metrics/sqlstore/admin_models.py (tests/unit/test_admin_models.py
compares the migrated schema with the models on SQLite).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "admin_members",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("monitor_url", sa.String(length=2048), nullable=False),
        sa.Column("client_url", sa.String(length=2048), nullable=True),
        sa.Column("username", sa.String(length=255), nullable=True),
        sa.Column("password", sa.String(length=255), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_admin_members")),
    )

    op.create_table(
        "admin_tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=True),
        sa.Column("last_used_at", UTC_DATETIME, nullable=True),
        sa.Column("revoked_at", UTC_DATETIME, nullable=True),
        sa.CheckConstraint(
            "role IN ('viewer', 'operator', 'admin')", name=op.f("ck_admin_tokens_role")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_admin_tokens_token_hash")),
    )

    op.create_table(
        "admin_audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", UTC_DATETIME, nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=True),
        sa.Column("token_id", sa.String(length=32), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=True),
        sa.Column("method", sa.String(length=8), nullable=False),
        sa.Column("path", sa.String(length=2048), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=1024), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_audit")),
    )
    op.create_index(op.f("ix_admin_audit_at"), "admin_audit", ["at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_admin_audit_at"), table_name="admin_audit")
    op.drop_table("admin_audit")
    op.drop_table("admin_tokens")
    op.drop_table("admin_members")
