"""Window statistics of the watched subject patterns (issue 25 item 1, ADR 030).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 04:00:00

Written by hand to match metrics/sqlstore/models.py (tests/unit/test_store_migrations.py compares
the migrated schema with the models). A table of its own: the statistics tables keep their key
(scope, indicator, window, as_of) and every reader of them is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
TABLE = "watched_window_stats"


def upgrade() -> None:
    op.create_table(
        TABLE,
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
        sa.Column("pattern", sa.String(length=1024), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["job_runs.id"],
            name=op.f("fk_watched_window_stats_run_id_job_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_watched_window_stats")),
        sa.UniqueConstraint(
            "pattern",
            "scope",
            "indicator",
            "window",
            "as_of",
            name=op.f("uq_watched_window_stats_pattern_scope_indicator_window_as_of"),
        ),
    )
    op.create_index(op.f("ix_watched_window_stats_run_id"), TABLE, ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_watched_window_stats_run_id"), table_name=TABLE)
    op.drop_table(TABLE)
