"""Alerts operators can rely on (issue 21 item 3): hysteresis columns and the built-in flag on
alert_rules, the six built-in rules (on by default), alert_silences and alert_acks.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 01:00:00

Written by hand to match metrics/sqlstore/admin_models.py (tests/unit/test_store_migrations.py
compares the migrated schema with the models). The built-in rules are data: an operator may edit,
disable or delete them like any other rule (docs/alerts.md lists them); this revision adds them
once and never again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import context, op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)

# name, signal, comparison, threshold, for, clear_threshold, clear_for, severity, scope, text
Builtin = tuple[str, str, str, float, float, float | None, float, str, str, str]
BUILTIN_RULES: tuple[Builtin, ...] = (
    (
        "MemberDown",
        "member_down",
        ">=",
        1.0,
        2.0,
        None,
        5.0,
        "critical",
        "member",
        "The health model reports the member down (it cannot be read, or its peers do not hear "
        "it) on every look of the last 2 s; resolved after 5 s up.",
    ),
    (
        "QuorumLost",
        "quorum_lost",
        ">=",
        1.0,
        5.0,
        None,
        10.0,
        "critical",
        "member",
        "The member cannot store guaranteed messages (seed quorum lost) for 5 s.",
    ),
    (
        "MemberRestarted",
        "member_restarted",
        ">=",
        1.0,
        0.0,
        None,
        300.0,
        "warning",
        "member",
        "The member's start time changed since the previous look; stays firing for 5 minutes.",
    ),
    (
        "SlowConsumersRising",
        "slow_consumer_disconnects",
        ">",
        0.1,
        60.0,
        0.0,
        60.0,
        "warning",
        "member",
        "More than 6 sessions a minute closed as slow consumers (average over 60 s); resolved "
        "after 60 s without any.",
    ),
    (
        "ArchiveNotWriting",
        "archive_failing",
        ">=",
        1.0,
        10.0,
        None,
        10.0,
        "warning",
        "member",
        "The member's metrics archive failed its last write or wrote nothing for 10 s.",
    ),
    (
        "StatsPipelineFailing",
        "stats_pipeline_failing",
        ">=",
        1.0,
        0.0,
        None,
        0.0,
        "warning",
        "cluster",
        "The latest statistics run (pushgrid stats run) failed; resolved by a successful run.",
    ),
)


def upgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.add_column(sa.Column("clear_threshold", sa.Float(), nullable=True))
        batch.add_column(sa.Column("clear_for", sa.Float(), nullable=True))
        batch.add_column(
            sa.Column("builtin", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table(
        "alert_silences",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("rule_id", sa.Integer(), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=True),
        sa.Column("until", UTC_DATETIME, nullable=False),
        sa.Column("comment", sa.String(length=1024), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=True),
        sa.ForeignKeyConstraint(
            ["rule_id"],
            ["alert_rules.id"],
            name=op.f("fk_alert_silences_rule_id_alert_rules"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_silences")),
    )
    op.create_table(
        "alert_acks",
        sa.Column("rule_id", sa.Integer(), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("at", UTC_DATETIME, nullable=False),
        sa.Column("by", sa.String(length=128), nullable=True),
        sa.Column("comment", sa.String(length=1024), nullable=False),
        sa.ForeignKeyConstraint(
            ["rule_id"],
            ["alert_rules.id"],
            name=op.f("fk_alert_acks_rule_id_alert_rules"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("rule_id", "target", name=op.f("pk_alert_acks")),
    )
    _seed()


def _seed() -> None:
    text, number = sa.String(), sa.Float()
    columns = {
        "name": text,
        "indicator": text,
        "window": text,
        "stat": text,
        "comparison": text,
        "threshold": number,
        "for_seconds": number,
        "severity": text,
        "scope": text,
        "description": text,
        "enabled": sa.Boolean(),
        "created_at": UTC_DATETIME,
        "created_by": text,
        "clear_threshold": number,
        "clear_for": number,
        "builtin": sa.Boolean(),
    }
    rules = sa.table("alert_rules", *(sa.column(name, kind) for name, kind in columns.items()))
    taken: set[str] = set()
    if not context.is_offline_mode():  # an SQL script (--sql) cannot read the rules
        taken = {row[0] for row in op.get_bind().execute(sa.text("SELECT name FROM alert_rules"))}
    now = datetime.now(UTC)
    rows = [
        {
            "name": name,
            "indicator": signal,
            "window": "current",
            "stat": "max",
            "comparison": comparison,
            "threshold": threshold,
            "for_seconds": for_seconds,
            "severity": severity,
            "scope": scope,
            "description": text,
            "enabled": True,
            "created_at": now,
            "created_by": "pushgrid",
            "clear_threshold": clear_threshold,
            "clear_for": clear_for,
            "builtin": True,
        }
        for (
            name,
            signal,
            comparison,
            threshold,
            for_seconds,
            clear_threshold,
            clear_for,
            severity,
            scope,
            text,
        ) in BUILTIN_RULES
        if name not in taken  # an operator's own rule of that name wins
    ]
    if rows:
        op.bulk_insert(rules, rows)


def downgrade() -> None:
    op.drop_table("alert_acks")
    op.drop_table("alert_silences")
    op.execute("DELETE FROM alert_rules WHERE builtin")
    with op.batch_alter_table("alert_rules") as batch:
        batch.drop_column("builtin")
        batch.drop_column("clear_for")
        batch.drop_column("clear_threshold")
