"""Built-in alert rules added by the admin API itself rather than by a migration (ADR 061).

``WorkerRestarted`` and ``WorkerNotAnswering`` read the Workers MBean of every member (the
signals: admin_api/alert_signals.py). They are added at start to a store that has no rule of
their name, on by default, ``builtin`` like the migrations' rules; an operator may edit,
disable or delete them. A deleted one comes back at the admin API's next start (disable it to
keep it off) until a migration records them (ADR 061, "What is left").
"""

from __future__ import annotations

import logging
from typing import Any, Final

from sqlalchemy import inspect, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import AlertRule
from pushgrid.metrics.sqlstore.models import utc_now

log = logging.getLogger(__name__)

_COMMON: Final[dict[str, Any]] = {
    "window": "current",
    "stat": "max",
    "comparison": ">=",
    "threshold": 1.0,
    "severity": "warning",
    "scope": "member",
    "enabled": True,
    "created_by": "pushgrid",
    "clear_threshold": None,
    "builtin": True,
}

WORKER_RULES: Final[tuple[dict[str, Any], ...]] = (
    {
        **_COMMON,
        "name": "WorkerRestarted",
        "indicator": "worker_restarted",
        "for_seconds": 0.0,
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
        "for_seconds": 0.0,
        "clear_for": 5.0,
        "description": (
            "A worker process of the member has not answered its supervisor's heartbeat for 5 s "
            "(stopped or stuck: its clients are not served); resolved 5 s after it answers."
        ),
    },
)


def add_worker_rules(factory: sessionmaker[Session]) -> list[str]:
    """Add the worker rules a store lacks (by name); the names added."""
    try:
        with factory() as db:
            if not inspect(db.get_bind()).has_table(AlertRule.__tablename__):
                return []  # not migrated yet: the routes say so themselves
            taken = set(db.scalars(select(AlertRule.name)))
            missing = [rule for rule in WORKER_RULES if rule["name"] not in taken]
            if missing:
                with transaction(db):
                    db.add_all(AlertRule(**rule, created_at=utc_now()) for rule in missing)
            return [rule["name"] for rule in missing]
    except SQLAlchemyError as exc:
        log.warning("cannot add the built-in worker alert rules: %s", exc)
        return []
