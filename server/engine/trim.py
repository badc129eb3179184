"""Give freed heap memory back to the operating system (glibc ``malloc_trim``, jemalloc's
``mallctl`` purge).

Evicting many subjects frees their objects, but glibc keeps the freed heap pages for reuse, so
the RSS stays at its peak (200,000 evicted one-shot subjects: 142 MiB kept, 38 MiB after a
trim). jemalloc (the default allocator, ADR 033) gives them back by itself, but only over its
decay time and as allocations tick it, and the event loop's thread cache holds up to 1,024
objects per size class (ADR 041's ``MALLOC_CONF``) until its next collection. ``release()``
flushes that cache and purges every arena at once (measured: 17-18% of a 20,000-subject flood's
growth kept, 19-21% without; the rest is slabs still holding surviving objects, which no purge
returns). Each step is a no-op where its allocator is not the one in use.
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


#: jemalloc's ``MALLCTL_ARENAS_ALL``: "every arena" in an ``arena.<i>.*`` name
_ARENAS_ALL = 4096
_JEMALLOC_RELEASE = (b"thread.tcache.flush", f"arena.{_ARENAS_ALL}.purge".encode())


@functools.cache
def _mallctl() -> Callable[..., int] | None:
    """jemalloc's ``mallctl`` when jemalloc is loaded in this process (``LD_PRELOAD``)."""
    if os.environ.get(TRIM_ENV) == "0":
        return None
    try:
        mallctl = ctypes.CDLL(None).mallctl
    except (OSError, AttributeError):  # jemalloc not loaded
        return None
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_size_t]  # fmt: skip
    mallctl.restype = ctypes.c_int
    call: Callable[..., int] = mallctl
    return call


def release() -> None:
    """Return the heap's free pages to the OS (a few ms on a large heap)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    mallctl = _mallctl()
    if mallctl is not None:
        for name in _JEMALLOC_RELEASE:
            mallctl(name, None, None, None, 0)
