"""Which worker process owns a subject: ``crc32(subject) % workers`` (ADR 044; ``/pushgrid/``
subjects: worker 0; every subject with a cluster engine: worker 0, ADR 067), and its share
of the server's memory bounds (ADR 056).

The owner numbers the subject's messages (one (epoch, seq) per server) and keeps its snapshot,
cache and history. The hash must be the same in every process: ``zlib.crc32``, never Python's
``hash()`` (salted per process by ``PYTHONHASHSEED``).
"""

from __future__ import annotations

import dataclasses
import zlib

from ..engine.base import META_PREFIX
from ..engine.limits import EngineLimits


def owner_of(subject: str, workers: int, clustered: bool = False) -> int:
    """The index (0 .. workers - 1) of the process that owns ``subject``. The server's own
    subjects (``/pushgrid/...``) belong to worker 0: it publishes them (meta-subject rounds, the
    admin API's alerts through its monitoring port), so they need no question on the mesh, and
    an alert about a stopped or restarting worker is not held up by that worker.

    ``clustered`` (a cluster engine, ADR 067): every subject belongs to worker 0, whose engine
    is the member's one cluster engine (one NATS connection, one membership); the others are
    the I/O layer: they hold connections and ask worker 0."""
    if workers <= 1 or clustered or subject.startswith(META_PREFIX):
        return 0
    return zlib.crc32(subject.encode("utf-8")) % workers


def share(total: int, workers: int, index: int) -> int:
    """Worker ``index``'s part of a server-wide bound of ``total`` (0: unbounded stays 0): an
    equal split, the remainder to the lowest indexes, so the parts add up to ``total``; at
    least 1 (0 would mean unbounded), so a bound below ``workers`` holds ``workers``."""
    if total <= 0:
        return 0
    return max(1, total // workers + (1 if index < total % workers else 0))


def worker_limits(
    limits: EngineLimits, workers: int, index: int, clustered: bool = False
) -> EngineLimits:
    """The limits of worker ``index``'s own engine: its share of ``MaxSubjects`` and
    ``MaxRetainedBytes`` (each owner holds only its subjects, so the server holds at most the
    configured bounds), the per-subject ones whole; ``clustered``: worker 0 owns every subject,
    so its engine gets the whole bounds."""
    if workers <= 1 or clustered or not (limits.max_subjects or limits.max_retained_bytes):
        return limits
    subjects = share(limits.max_subjects, workers, index)
    size = share(limits.max_retained_bytes, workers, index)
    return dataclasses.replace(
        limits,
        max_subjects=subjects,
        max_retained_bytes=size,
        share_note=(
            f" (worker {index}'s share of this server's MaxSubjects = {limits.max_subjects}, "
            f"MaxRetainedBytes = {limits.max_retained_bytes}, over {workers} worker processes)"
        ),
    )
