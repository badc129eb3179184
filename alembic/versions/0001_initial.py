"""Initial schema: job_runs, window_stats, trend_points.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 16:00:00

Written by hand to match metrics/sqlstore/models.py (tests/unit/test_store_migrations.py
compares the migrated schema with the models on SQLite; the PostgreSQL test runs it too).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def _stat_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=255), nullable=False),
        sa.Column("indicator", sa.String(length=64), nullable=False),
        sa.Column("window", sa.String(length=16), nullable=False),
        sa.Column("as_of", UTC_DATETIME, nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("max", sa.Float(), nullable=True),
        sa.Column("avg", sa.Float(), nullable=True),
        sa.Column("stddev", sa.Float(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("computed_at", UTC_DATETIME, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "job_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("started_at", UTC_DATETIME, nullable=False),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("as_of", UTC_DATETIME, nullable=True),
        sa.Column("master", sa.String(length=255), nullable=True),
        sa.Column("input_rows", sa.BigInteger(), nullable=True),
        sa.Column("output_rows", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("stages", sa.JSON(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed')", name=op.f("ck_job_runs_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_runs")),
    )

    op.create_table(
        "window_stats",
        *_stat_columns(),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["job_runs.id"],
            name=op.f("fk_window_stats_run_id_job_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_window_stats")),
        sa.UniqueConstraint(
            "scope",
            "indicator",
            "window",
            "as_of",
            name=op.f("uq_window_stats_scope_indicator_window_as_of"),
        ),
    )
    op.create_index(op.f("ix_window_stats_run_id"), "window_stats", ["run_id"], unique=False)

    op.create_table(
        "trend_points",
        *_stat_columns(),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["job_runs.id"],
            name=op.f("fk_trend_points_run_id_job_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trend_points")),
    )
    op.create_index(
        op.f("ix_trend_points_scope_indicator_window_as_of"),
        "trend_points",
        ["scope", "indicator", "window", "as_of"],
        unique=True,
    )
    op.create_index(op.f("ix_trend_points_run_id"), "trend_points", ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_trend_points_run_id"), table_name="trend_points")
    op.drop_index(op.f("ix_trend_points_scope_indicator_window_as_of"), table_name="trend_points")
    op.drop_table("trend_points")
    op.drop_index(op.f("ix_window_stats_run_id"), table_name="window_stats")
    op.drop_table("window_stats")
    op.drop_table("job_runs")
