"""Open-file limit: every client connection is a file descriptor.

Distributions start processes with a soft ``RLIMIT_NOFILE`` of 1,024 while the hard limit is
much higher (20,000 on our machines); the server raises its soft limit to the hard limit at
start-up so that ``MaxConnections`` is not silently capped by ``EMFILE`` on accept.
"""

from __future__ import annotations

import resource


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft open-file limit to the hard limit; return the (old, new) soft limits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == hard:
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        return soft, soft
    return soft, hard
