"""How many processes ``Workers = auto`` means, and whether a count fits the descriptor limit.

``auto`` is the number of cores this process may use: its CPU affinity (``taskset``, a
cpuset), capped by its cgroup's CPU quota (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us``
over ``cpu.cfs_period_us``; a Kubernetes CPU limit ends up there) rounded up, at least 1. The
parsing is pure (tested with the files' text); :func:`auto_workers` reads the files.
"""

from __future__ import annotations

import math
import os
import resource
from pathlib import Path

from pushgrid.config import ConfigError

CGROUP_ROOT = Path("/sys/fs/cgroup")

#: descriptors a worker needs besides its connections: listeners, the mesh's control socket,
#: the monitoring port, log files, the event loop's own, a safety margin
WORKER_RESERVED_FILES = 64


def quota_cores(quota: int | None, period: int | None) -> float | None:
    """Cores a CFS quota allows (``quota`` microseconds of CPU per ``period``); None: no limit."""
    if quota is None or period is None or quota <= 0 or period <= 0:
        return None
    return quota / period


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 ``cpu.max`` (``"max 100000"`` or ``"150000 100000"``) -> cores, None: no limit."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        return quota_cores(int(parts[0]), int(parts[1]))
    except ValueError:
        return None


def cgroup_v2_path(proc_cgroup: str) -> str | None:
    """This process's cgroup v2 path from ``/proc/self/cgroup`` (the ``0::/path`` line)."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def usable_cores(affinity: int, quota: float | None) -> int:
    """The cores this process may use: its affinity, capped by the quota rounded up (1.5 cores
    of quota keep 2 processes busy part-time rather than 1 fully), at least 1."""
    cores = max(1, affinity)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota - 1e-9)))
    return cores


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        return None


def cgroup_quota(root: Path = CGROUP_ROOT) -> float | None:
    """The CPU quota of this process's cgroup (v2 first, then v1), in cores; None: no limit."""
    own = cgroup_v2_path(_read(Path("/proc/self/cgroup")) or "")
    if own is not None:
        text = _read(root / own.lstrip("/") / "cpu.max")
        if text is not None:
            return parse_cpu_max(text)
    quota = _read(root / "cpu" / "cpu.cfs_quota_us") or _read(root / "cpu.cfs_quota_us")
    period = _read(root / "cpu" / "cpu.cfs_period_us") or _read(root / "cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    try:
        return quota_cores(int(quota), int(period))
    except ValueError:
        return None


def auto_workers() -> int:
    """What ``Workers = auto`` means for this process."""
    return usable_cores(len(os.sched_getaffinity(0)), cgroup_quota())


def check_descriptors(workers: int, listeners: int, hard_limit: int) -> None:
    """ConfigError naming ``Workers`` when ``workers`` processes could not even open their mesh:
    each holds a link to every other one, its listeners and ``WORKER_RESERVED_FILES``, and the
    supervisor holds every worker's listeners and control socket."""
    if hard_limit == resource.RLIM_INFINITY:
        return
    per_worker = (workers - 1) + listeners + WORKER_RESERVED_FILES
    supervisor = workers * (listeners + 2) + WORKER_RESERVED_FILES
    need = max(per_worker, supervisor)
    if need > hard_limit:
        raise ConfigError(
            f"Workers = {workers} needs at least {need} open files per process before any "
            f"client connects, above the open-file limit {hard_limit} (LimitNOFILE / ulimit -n): "
            "lower Workers or raise the limit"
        )


def resolve_workers(value: int | str, auto: int) -> int:
    """The number of processes ``Workers = value`` means (``auto``: the usable cores), with
    the memory engine and a cluster engine alike (ADR 067: a cluster member's worker 0 holds
    its one cluster engine)."""
    return auto if value == "auto" else int(value)
