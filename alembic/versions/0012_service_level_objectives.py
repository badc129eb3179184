"""Service level objectives (issue 33 item 6, ADR 055): ``slo_objectives``, ``slo_minutes`` and
the two burn-rate alerts ``SLOFastBurn`` and ``SLOSlowBurn``.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 05:40:00

Written by hand to match metrics/sqlstore/admin_models.py (tests/unit/test_store_migrations.py
compares the migrated schema with the models). The two rules are data, built in like those of
0006: an operator may edit, disable or delete them; an operator's own rule of that name wins;
the revision adds them once and never again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import context, op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)

# name, signal, threshold, clear_for, severity, description
RULES: tuple[tuple[str, str, float, float, str, str], ...] = (
    (
        "SLOFastBurn",
        "slo_fast_burn",
        14.4,
        60.0,
        "critical",
        "An objective burns its error budget at 14.4 times the rate that spends it over its "
        "period, over both the last hour and the last 5 minutes (2 % of a 30-day budget an "
        "hour); resolved after 60 s below.",
    ),
    (
        "SLOSlowBurn",
        "slo_slow_burn",
        6.0,
        300.0,
        "warning",
        "An objective burns its error budget at 6 times the rate that spends it over its "
        "period, over both the last 6 hours and the last 30 minutes (5 % of a 30-day budget in "
        "6 hours); resolved after 5 minutes below.",
    ),
)


def upgrade() -> None:
    op.create_table(
        "slo_objectives",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=48), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("target", sa.Float(), nullable=False),
        sa.Column("period_days", sa.Integer(), nullable=False),
        sa.Column("threshold_ms", sa.Float(), nullable=True),
        sa.Column("description", sa.String(length=1024), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "slo_minutes",
        sa.Column("objective_id", sa.Integer(), nullable=False),
        sa.Column("minute", sa.BigInteger(), nullable=False),
        sa.Column("good", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["objective_id"], ["slo_objectives.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("objective_id", "minute"),
    )
    _add_rules()


def _add_rules() -> None:
    kinds = {"threshold": sa.Float(), "for_seconds": sa.Float(), "clear_threshold": sa.Float()}
    kinds |= {"clear_for": sa.Float(), "enabled": sa.Boolean(), "builtin": sa.Boolean()}
    kinds["created_at"] = sa.DateTime(timezone=True)
    rows = [
        {
            "name": name,
            "indicator": signal,
            "window": "current",
            "stat": "max",
            "comparison": ">=",
            "threshold": threshold,
            "for_seconds": 0.0,
            "severity": severity,
            "scope": "member",
            "description": text,
            "enabled": True,
            "created_by": "pushgrid",
            "clear_threshold": None,
            "clear_for": clear_for,
            "builtin": True,
            "created_at": datetime.now(UTC),
        }
        for name, signal, threshold, clear_for, severity, text in RULES
    ]
    rules = sa.table("alert_rules", *(sa.column(n, kinds.get(n, sa.String())) for n in rows[0]))
    if not context.is_offline_mode():  # an SQL script (--sql) cannot read the rules
        taken = {
            row[0]
            for row in op.get_bind().execute(
                sa.text("SELECT name FROM alert_rules WHERE name IN ('SLOFastBurn', 'SLOSlowBurn')")
            )
        }
        rows = [row for row in rows if row["name"] not in taken]
    if rows:
        op.bulk_insert(rules, rows)


def downgrade() -> None:
    op.execute(
        sa.text("DELETE FROM alert_rules WHERE builtin AND name IN ('SLOFastBurn', 'SLOSlowBurn')")
    )
    op.drop_table("slo_minutes")
    op.drop_table("slo_objectives")
