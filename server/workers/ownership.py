"""Which worker process owns a subject: ``crc32(subject) % workers`` (ADR 044).

The owner numbers the subject's messages (one (epoch, seq) per server) and keeps its snapshot,
cache and history. The hash must be the same in every process: ``zlib.crc32``, never Python's
``hash()`` (salted per process by ``PYTHONHASHSEED``).
"""

from __future__ import annotations

import zlib


def owner_of(subject: str, workers: int) -> int:
    """The index (0 .. workers - 1) of the process that owns ``subject``."""
    if workers <= 1:
        return 0
    return zlib.crc32(subject.encode("utf-8")) % workers
