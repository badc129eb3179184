"""The built-in alert on client-observed loss (issue 33 item 2, ADR 048): ``ClientsSeeLoss``.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 02:30:00

Data only (no schema change): one built-in rule, on by default, on the ``client_loss`` signal
(what a Guaranteed member's clients could not get back). As with the rules of 0006, an operator
may edit, disable or delete it; an operator's own rule of that name wins; the revision adds it
once and never again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import context, op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = "ClientsSeeLoss"
RULE = {
    "name": NAME,
    "indicator": "client_loss",
    "window": "current",
    "stat": "max",
    "comparison": ">=",
    "threshold": 1.0,
    "for_seconds": 0.0,
    "severity": "critical",
    "scope": "member",
    "description": "A Guaranteed member's clients reported messages they could not get back "
    "(resyncs or failed recoveries) in its last 60 s; resolved after 60 s without any.",
    "enabled": True,
    "created_by": "pushgrid",
    "clear_threshold": None,
    "clear_for": 60.0,
    "builtin": True,
}


def upgrade() -> None:
    kinds = {"threshold": sa.Float(), "for_seconds": sa.Float(), "clear_threshold": sa.Float()}
    kinds |= {"clear_for": sa.Float(), "enabled": sa.Boolean(), "builtin": sa.Boolean()}
    kinds["created_at"] = sa.DateTime(timezone=True)
    names = [*RULE, "created_at"]
    rules = sa.table("alert_rules", *(sa.column(n, kinds.get(n, sa.String())) for n in names))
    if not context.is_offline_mode():  # an SQL script (--sql) cannot read the rules
        taken = op.get_bind().execute(
            sa.text("SELECT 1 FROM alert_rules WHERE name = :name"), {"name": NAME}
        )
        if taken.first() is not None:
            return
    op.bulk_insert(rules, [{**RULE, "created_at": datetime.now(UTC)}])


def downgrade() -> None:
    op.execute(
        sa.text("DELETE FROM alert_rules WHERE builtin AND name = :name").bindparams(name=NAME)
    )
