"""The clients' loss reports in the delivery windows (issue 33 item 2): totals per kind.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 20:00:00

Written by hand to match metrics/sqlstore/models.py (tests/unit/test_store_migrations.py compares
the migrated schema with the models). Five counters per (scope, series, window, as_of) row of
``delivery_window_stats``: the window's totals of gaps, duplicates, resyncs, recoveries and
failed recoveries the clients reported; 0 for the rows written before (the next run rewrites
them from the archive).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "delivery_window_stats"
KINDS = ("gaps", "duplicates", "resyncs", "recovered", "recovery_failed")


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as table:
        for kind in KINDS:
            table.add_column(sa.Column(kind, sa.BigInteger(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table(TABLE) as table:
        for kind in reversed(KINDS):
            table.drop_column(kind)
