"""Window percentiles of delivery latency from merged buckets (issue 33 item 1, ADR 062).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28 16:00:00

Written by hand to match metrics/sqlstore/models.py (tests/unit/test_store_migrations.py compares
the migrated schema with the models). One row per (scope, series, window, as_of): ``series`` is
the archive's delivery scope (``member``, ``leg:<leg>``, ``pattern:<pattern>``), ``buckets`` the
window's merged histogram as text (``index:count``), so any percentile can be read again.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
TABLE = "delivery_window_stats"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=255), nullable=False),
        sa.Column("series", sa.String(length=1040), nullable=False),
        sa.Column("window", sa.String(length=16), nullable=False),
        sa.Column("as_of", UTC_DATETIME, nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("p50", sa.Float(), nullable=True),
        sa.Column("p90", sa.Float(), nullable=True),
        sa.Column("p99", sa.Float(), nullable=True),
        sa.Column("p999", sa.Float(), nullable=True),
        sa.Column("buckets", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("computed_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["job_runs.id"],
            name=op.f("fk_delivery_window_stats_run_id_job_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_window_stats")),
        sa.UniqueConstraint(
            "scope",
            "series",
            "window",
            "as_of",
            name=op.f("uq_delivery_window_stats_scope_series_window_as_of"),
        ),
    )
    op.create_index(op.f("ix_delivery_window_stats_run_id"), TABLE, ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_delivery_window_stats_run_id"), table_name=TABLE)
    op.drop_table(TABLE)
