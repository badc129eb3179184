"""pushgrid's SQL store: one schema, its migrations, engines and the one transaction helper.

Owned by no feature and shared by the statistics pipeline (writes ``job_runs`` and the
statistics tables), the admin API (reads them; owns nothing but its services) and the command
line (``pushgrid db upgrade``). It imports SQLAlchemy, Alembic (lazily) and ``metrics``' leaf
modules only: never ``server``, ``admin_api``, ``spark_stats`` or ``console`` (ADR 015).

Importing this package registers every table on :class:`Base` (statistics and admin models),
which is what ``alembic/env.py`` needs. Modules:

* :mod:`.engine`: URLs, engines, SQL session factories, :func:`transaction`, :class:`StoreError`;
* :mod:`.models`, :mod:`.admin_models`: the tables;
* :mod:`.schema`: the packaged Alembic migrations (``upgrade``, revisions);
* :mod:`.runs`: ``job_runs`` (start, stages, finish, stale runs);
* :mod:`.results`: write a run's statistics, read the latest ones and trends.
"""

from . import admin_models
from .delivery_results import delivery_window_stats
from .engine import (
    StoreError,
    display_url,
    make_engine,
    make_session_factory,
    normalize_url,
    session_scope,
    transaction,
)
from .models import Base, DeliveryWindowStat, JobRun, TrendPoint, WatchedWindowStat, WindowStat
from .results import (
    StatResult,
    WrittenRows,
    trend,
    watched_window_stats,
    window_stats,
    write_results,
)
from .runs import (
    INTERRUPTED,
    MAX_ERROR_CHARS,
    RunOwner,
    fail_stale,
    finish_run,
    get_run,
    latest_runs,
    record_stages,
    running_run,
    start_run,
)
from .schema import (
    alembic_config,
    current_revision,
    has_schema,
    head_revision,
    migrations_dir,
    upgrade,
)

__all__ = [
    "INTERRUPTED",
    "MAX_ERROR_CHARS",
    "Base",
    "DeliveryWindowStat",
    "JobRun",
    "RunOwner",
    "StatResult",
    "StoreError",
    "TrendPoint",
    "WatchedWindowStat",
    "WindowStat",
    "WrittenRows",
    "admin_models",
    "alembic_config",
    "current_revision",
    "delivery_window_stats",
    "display_url",
    "fail_stale",
    "finish_run",
    "get_run",
    "has_schema",
    "head_revision",
    "latest_runs",
    "make_engine",
    "make_session_factory",
    "migrations_dir",
    "normalize_url",
    "record_stages",
    "running_run",
    "session_scope",
    "start_run",
    "transaction",
    "trend",
    "upgrade",
    "watched_window_stats",
    "window_stats",
    "write_results",
]
