"""A statistics run stopped by a clean shutdown is ``interrupted``, not ``failed`` (issue 34).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 23:10:00

Written by hand to match metrics/sqlstore/models.py (tests/unit/test_store_migrations.py compares
the migrated schema with the models). Only the status check widens; rows stay as they are (a run
interrupted before this revision stays ``failed`` with the error ``interrupted``).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BEFORE = "status IN ('running', 'succeeded', 'failed')"
AFTER = "status IN ('running', 'succeeded', 'failed', 'interrupted')"


def _check(condition: str) -> None:
    # SQLite copies the table in batch mode; PostgreSQL alters it in place
    with op.batch_alter_table("job_runs") as batch:
        batch.drop_constraint(op.f("ck_job_runs_status"), type_="check")
        batch.create_check_constraint("status", condition)  # named by the convention


def upgrade() -> None:
    _check(AFTER)


def downgrade() -> None:
    op.execute("UPDATE job_runs SET status = 'failed' WHERE status = 'interrupted'")
    _check(BEFORE)
