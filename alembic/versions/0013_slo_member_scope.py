"""An objective may count one member's clients or one watched pattern's deliveries (issue 33
item 7): ``slo_objectives.member`` and ``slo_objectives.pattern``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 13:00:00

Written by hand to match metrics/sqlstore/admin_models.py (tests/unit/test_store_migrations.py
compares the migrated schema with the models). Null, the default, is the whole cluster: every
objective stored before this revision keeps counting what it counted.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("slo_objectives") as batch:
        batch.add_column(sa.Column("member", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("pattern", sa.String(length=1024), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("slo_objectives") as batch:
        batch.drop_column("pattern")
        batch.drop_column("member")
