"""The built-in rules WorkerRestarted and WorkerNotAnswering (issue 31 items 4, 5; ADR 061):
a member's worker process died and was restarted, or stopped answering its heartbeat.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 19:20:00

Data only, like revisions 0006 and 0010: added once, on by default; an operator's own rule of
either name wins (that one is not added), and the operator may edit, disable or delete them (a
deleted one stays deleted). Until this revision the admin API added them at every start.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import context, op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COMMON: dict[str, Any] = {
    "window": "current",
    "stat": "max",
    "comparison": ">=",
    "threshold": 1.0,
    "for_seconds": 0.0,
    "severity": "warning",
    "scope": "member",
    "enabled": True,
    "created_by": "pushgrid",
    "clear_threshold": None,
    "builtin": True,
}
RULES = (
    {
        **_COMMON,
        "name": "WorkerRestarted",
        "indicator": "worker_restarted",
        "clear_for": 300.0,
        "description": (
            "A worker process of the member died and its supervisor restarted it (the target "
            "names the member, the worker index and the new pid); stays firing for 5 minutes."
        ),
    },
    {
        **_COMMON,
        "name": "WorkerNotAnswering",
        "indicator": "worker_not_answering",
        "clear_for": 5.0,
        "description": (
            "A worker process of the member has not answered its supervisor's heartbeat for 5 s "
            "(stopped or stuck: its clients are not served); resolved 5 s after it answers."
        ),
    },
)


def upgrade() -> None:
    number, text = sa.Float(), sa.String()
    kinds = {
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
        "created_at": sa.DateTime(timezone=True),
        "created_by": text,
        "clear_threshold": number,
        "clear_for": number,
        "builtin": sa.Boolean(),
    }
    rules = sa.table("alert_rules", *(sa.column(name, kind) for name, kind in kinds.items()))
    wanted = list(RULES)
    if not context.is_offline_mode():  # an SQL script (--sql) cannot read the rules
        taken = {
            row[0]
            for row in op.get_bind().execute(
                sa.text(
                    "SELECT name FROM alert_rules WHERE name IN ('WorkerRestarted', "
                    "'WorkerNotAnswering')"
                )
            )
        }
        wanted = [rule for rule in RULES if rule["name"] not in taken]  # an operator's own wins
    if wanted:
        now = datetime.now(UTC)
        op.bulk_insert(rules, [{**rule, "created_at": now} for rule in wanted])


def downgrade() -> None:
    op.execute(
        sa.text(
            "DELETE FROM alert_rules WHERE builtin "
            "AND name IN ('WorkerRestarted', 'WorkerNotAnswering')"
        )
    )
