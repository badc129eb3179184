"""The processes of a member (``Workers``, docs/workers.md): one row each on its member card.

The rows are the admin API's member view ``processes``, decoded into the ops contract's
:class:`~pushgrid.ops.workers.WorkerProcess` (MBean ``pushgrid:type=Workers``).
:func:`process_cells` is pure (unit-tested); a row's level says what needs a look: ``bad``
while the process does not answer its heartbeat or is dead (pid 0), ``warn`` once it was
restarted or while worker 0 has no link to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from dash import html

from pushgrid.ops.workers import WorkerProcess

from . import format as fmt
from .components import attrs
from .member_panel import LOOP_LAG_LEVELS, Level

HEADERS: Final = (
    "worker",
    "pid",
    "cores",
    "CPU",
    "RSS",
    "connections",
    "open files",
    "loop lag (max)",
    "state",
)


def cores_text(cpus: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"`` (as taskset writes a list)."""
    if not cpus:
        return fmt.DASH
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def state_text(p: WorkerProcess) -> tuple[str, Level]:
    """What a process's state column says, and its level."""
    restarts = f", restarted {fmt.plural(p.restarts, 'time')}" if p.restarts else ""
    if p.pid == 0:
        return f"dead, restarting{restarts}", "bad"
    if not p.answering:
        age = fmt.number(p.heartbeat_age_seconds or 0.0)
        return f"not answering for {age} s{restarts}", "bad"
    if not p.linked:
        return f"not linked{restarts}", "warn"
    return f"linked{restarts}", "warn" if p.restarts else "ok"


def process_cells(p: WorkerProcess) -> tuple[list[str], Level]:
    """A process's cells (in :data:`HEADERS` order) and its row's level."""
    state, level = state_text(p)
    lag = f"{fmt.latency(p.loop_lag_seconds)} ({fmt.latency(p.loop_lag_max_seconds)})"
    lag_max = p.loop_lag_max_seconds
    if level == "ok" and lag_max is not None and lag_max > LOOP_LAG_LEVELS[0]:
        level = "warn"
    cpu = fmt.DASH if p.cpu_percent is None else f"{p.cpu_percent:.1f} %"
    cells = [
        str(p.index),
        str(p.pid) if p.pid else fmt.DASH,
        cores_text(p.cpus),
        cpu,
        fmt.compact(p.rss_bytes, "bytes"),
        fmt.count(p.connections),
        fmt.count(p.open_files),
        lag,
        state,
    ]
    return cells, level


def processes_summary(processes: Sequence[WorkerProcess]) -> str:
    """``"2 processes on cores 0-1"``."""
    cores = cores_text(sorted({c for p in processes for c in p.cpus}))
    return f"{fmt.plural(len(processes), 'process', 'processes')} on cores {cores}"


def _cell(header: str, cell: str) -> html.Span:
    """One value of a row, named for a narrow card: ``CPU 4.2 %`` (a row wraps between them)."""
    shown = cell if header in ("state",) else f"{header} {cell}"
    return html.Span(
        shown,
        className=f"process-cell cell-{header.replace(' ', '-')}",
        **attrs({"data-cell": header, "data-value": cell}),
    )


def render_processes(processes: Sequence[WorkerProcess] | None) -> html.Div:
    """The processes block of a member card (empty without rows): one row per process, its
    values wrapping inside the card's width."""
    if not processes:
        return html.Div(className="member-processes")
    rows = []
    for p in processes:
        cells, level = process_cells(p)
        rows.append(
            html.Div(
                [_cell(h, c) for h, c in zip(HEADERS, cells, strict=True)],
                className=f"process-row panel-{level}",
                **attrs(
                    {
                        "data-worker": str(p.index),
                        "data-pid": str(p.pid),
                        "data-level": level,
                        # the number behind a "warn" of a busy process (its loop lag's max)
                        "data-lag-max": ""
                        if p.loop_lag_max_seconds is None
                        else str(p.loop_lag_max_seconds),
                    }
                ),
            )
        )
    return html.Div(
        [html.Div(processes_summary(processes), className="process-summary muted small"), *rows],
        className="member-processes",
        **attrs({"data-processes": str(len(processes))}),
    )
