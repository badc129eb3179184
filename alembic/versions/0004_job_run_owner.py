"""The owner of a job run: host, process id and warehouse (stale ``running`` rows).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 06:45:00

Written by hand to match metrics/sqlstore/models.py (tests/unit/test_store_migrations.py compares
the migrated schema with the models). Rows from before have no owner: the next run on any
warehouse treats a ``running`` one as killed, as it did before this revision.
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
    with op.batch_alter_table("job_runs") as batch:
        batch.add_column(sa.Column("owner_host", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("owner_pid", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("warehouse", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job_runs") as batch:
        batch.drop_column("warehouse")
        batch.drop_column("owner_pid")
        batch.drop_column("owner_host")
