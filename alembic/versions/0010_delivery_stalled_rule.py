"""The built-in rule DeliveryStalled (issue 33 item 3, ADR 049): a member's canaries stopped
reaching a member.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 02:30:00

Data only, like the built-in rules of revision 0006: added once, on by default; an operator's
own rule of that name wins (nothing is added), and the operator may edit, disable or delete it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import context, op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = "DeliveryStalled"
RULE = {
    "name": NAME,
    "indicator": "delivery_stalled",
    "window": "current",
    "stat": "max",
    "comparison": ">=",
    "threshold": 1.0,
    "for_seconds": 2.0,
    "severity": "critical",
    "scope": "member",
    "description": (
        "A member's canaries no longer reach a member through its delivery path (the pair "
        "publisher->receiver is the target): the receiver accepts publishes but delivers nothing "
        "(degraded: delivery) for 2 s; resolved after 5 s of canaries arriving again."
    ),
    "enabled": True,
    "created_by": "pushgrid",
    "clear_threshold": None,
    "clear_for": 5.0,
    "builtin": True,
}


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
    if not context.is_offline_mode():  # an SQL script (--sql) cannot read the rules
        taken = op.get_bind().execute(
            sa.text("SELECT 1 FROM alert_rules WHERE name = :name"), {"name": NAME}
        )
        if taken.first() is not None:  # an operator's own rule of that name wins
            return
    op.bulk_insert(rules, [{**RULE, "created_at": datetime.now(UTC)}])


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM alert_rules WHERE builtin AND name = 'DeliveryStalled'"))
