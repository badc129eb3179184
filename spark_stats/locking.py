"""One statistics run per warehouse: an exclusive ``flock`` on ``<warehouse>/.lock``.

Kept free of pyspark so the admin API can ask whether a run is going on. The kernel releases a
killed run's lock, so a held lock always means a live run.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from pushgrid.protocol.exceptions import StatsError

__all__ = ["StoreBusyError", "warehouse_busy", "warehouse_lock"]


class StoreBusyError(StatsError, RuntimeError):
    """Another pipeline run holds the warehouse lock (retry when it ends)."""

    code = "store_busy"
    retryable = True


@contextlib.contextmanager
def warehouse_lock(warehouse_dir: Path) -> Iterator[None]:
    """Exclusive, non-blocking lock of a warehouse for the duration of one pipeline run."""
    warehouse_dir.mkdir(parents=True, exist_ok=True)
    handle = (warehouse_dir / ".lock").open("a+")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreBusyError(f"another statistics run is using {warehouse_dir}") from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def warehouse_busy(warehouse_dir: Path) -> bool:
    """Whether a run holds the warehouse lock now (a dead run's lock is released by the kernel)."""
    path = warehouse_dir / ".lock"
    if not path.exists():
        return False
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return False
