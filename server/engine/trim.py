"""Give freed heap memory back to the operating system (glibc ``malloc_trim``).

Evicting many subjects frees their objects, but glibc keeps the freed heap pages for reuse, so
the RSS stays at its peak (200,000 evicted one-shot subjects: 142 MiB kept, 38 MiB after a
trim). ``release()`` is a no-op where glibc is not the allocator.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable

#: ``_PUSHGRID_MALLOC_TRIM=0`` turns the trim off (to measure what it gives:
#: ``benchmarks/subject_memory.py compare``)
TRIM_ENV = "_PUSHGRID_MALLOC_TRIM"


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if os.environ.get(TRIM_ENV) == "0":
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return None
    return trim


def release() -> None:
    """Return the heap's free pages to the OS (a few ms on a large heap)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
