"""The text ``pushgrid status`` prints of a member's processes (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from pushgrid.ops.workers import WorkerProcess


def cores(cpus: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5`` (as taskset and cpusets write a list)."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs) or "?"


def _state(p: WorkerProcess) -> str:
    if p.pid == 0:
        state = "dead, restarting"
    elif not p.answering:
        state = f"NOT ANSWERING for {p.heartbeat_age_seconds or 0:.1f} s"
    else:
        state = "linked" if p.linked else "not linked"
    return state + (f", restarted {p.restarts}x" if p.restarts else "")


def member_text(name: str, url: str, processes: Sequence[WorkerProcess]) -> str:
    """``m1 (http://...): 2 processes on cores 0-1`` and one line per process."""
    every = cores([c for p in processes for c in p.cpus])
    count = len(processes)
    lines = [f"{name} ({url}): {count} process{'' if count == 1 else 'es'} on cores {every}"]
    for p in processes:
        cpu = "-" if p.cpu_percent is None else f"{p.cpu_percent:.1f}%"
        lines.append(
            f"  worker {p.index}  pid {p.pid or '-':<7}  cores {cores(p.cpus):<7}  cpu {cpu:>6}  "
            f"rss {p.rss_bytes / 2**20:7.1f} MiB  connections {p.connections:>6}  "
            f"open files {p.open_files:>6}  {_state(p)}"
        )
    return "\n".join(lines)
