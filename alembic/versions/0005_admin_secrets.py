"""Secrets at rest (issue 22 item 5): registered members' passwords are stored encrypted (a
Fernet token, longer than the password: the column widens) and API tokens may expire.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 22:00:00

Written by hand to match metrics/sqlstore/admin_models.py (tests/unit/test_store_migrations.py
compares the migrated schema with the models). Passwords stored in clear before this revision
are encrypted by the admin API when it starts (``MemberService.encrypt_stored``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("admin_members") as batch:
        batch.alter_column(
            "password", type_=sa.String(length=1024), existing_type=sa.String(length=255)
        )
    with op.batch_alter_table("admin_tokens") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("admin_tokens") as batch:
        batch.drop_column("expires_at")
    with op.batch_alter_table("admin_members") as batch:
        batch.alter_column(
            "password", type_=sa.String(length=255), existing_type=sa.String(length=1024)
        )
