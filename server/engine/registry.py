"""Engine name (the ``Engine`` setting) -> a factory building it from the settings.

The NATS engines are imported only when chosen, so a standalone server never loads nats-py.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import ServerSettings, Settings
from .base import Engine, SnapshotBounds
from .memory import MemoryEngine


def snapshot_bounds(settings: ServerSettings) -> SnapshotBounds:
    """MaxFieldsPerSubject and MaxSnapshotSize, which every engine enforces (guarantee 11)."""
    return SnapshotBounds(settings.max_fields_per_subject, settings.max_snapshot_size)


def _memory(settings: Settings) -> Engine:
    return MemoryEngine(
        max_cached=settings.max_cached_messages_per_subject,
        expire_seconds=settings.cache_expire_time,
        dedup_window=settings.publish_dedup_window,
        dedup_max_keys=settings.publish_dedup_max_keys,
        max_subjects=settings.max_subjects,
        max_retained_bytes=settings.max_retained_bytes,
        bounds=snapshot_bounds(settings),
    )


def _nats(settings: Settings) -> Engine:
    from .cluster_factory import build_cluster_engine

    return build_cluster_engine(settings)


ENGINES: dict[str, Callable[[Settings], Engine]] = {"memory": _memory, "nats": _nats}


def build_engine(settings: Settings) -> Engine:
    return ENGINES[settings.engine_name](settings)
