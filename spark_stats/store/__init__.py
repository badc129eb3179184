"""The SQL store of the statistics pipeline: models, migrations, writers and readers.

Importable without pyspark or pandas (the admin API reads through it).
"""

from .db import (
    StoreError,
    WrittenRows,
    current_revision,
    display_url,
    finish_run,
    get_run,
    has_schema,
    head_revision,
    latest_runs,
    make_engine,
    make_session_factory,
    session_scope,
    start_run,
    trend,
    upgrade,
    window_stats,
    write_results,
)
from .models import Base, JobRun, TrendPoint, WindowStat

__all__ = [
    "Base",
    "JobRun",
    "StoreError",
    "TrendPoint",
    "WindowStat",
    "WrittenRows",
    "current_revision",
    "display_url",
    "finish_run",
    "get_run",
    "has_schema",
    "head_revision",
    "latest_runs",
    "make_engine",
    "make_session_factory",
    "session_scope",
    "start_run",
    "trend",
    "upgrade",
    "window_stats",
    "write_results",
]
