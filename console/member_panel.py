"""The member panel of an Overview member card: process CPU, RSS, open files against the limit,
event-loop lag, flush delay p50/p99, slow consumers and the JetStream replica lag.

The values are the admin API's member view ``panel``, decoded into the ops contract's
:class:`~pushgrid.ops.panel.MemberPanel` (MBean ``pushgrid:type=MemberPanel``; docs/monitoring.md,
"Member panel"). :func:`panel_facts` is pure (unit-tested); each fact has a
level, ``ok | warn | bad``, by the thresholds below, so a card shows what needs a look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from dash import html

from pushgrid.ops.panel import MemberPanel

from . import format as fmt
from .components import attrs

Level = Literal["ok", "warn", "bad"]

# open files / limit, loop lag max (s), flush p99 (s): above the first value warn, the second bad
OPEN_FILES_LEVELS: Final = (0.8, 0.95)
LOOP_LAG_LEVELS: Final = (0.1, 1.0)
FLUSH_P99_LEVELS: Final = (0.05, 0.25)
# records: the health model's stream_lag limit (metrics/health.py STREAM_LAG_LIMIT, which the
# console may not import; a unit test keeps the two equal)
REPLICA_LAG_LIMIT: Final = 1000


@dataclass(frozen=True, slots=True)
class Fact:
    key: str  # data-panel attribute of the fact, for tests and scripts
    name: str
    value: str
    level: Level = "ok"


def _level(value: float | None, levels: tuple[float, float]) -> Level:
    if value is None:
        return "ok"
    warn, bad = levels
    return "bad" if value > bad else "warn" if value > warn else "ok"


def _open_files(panel: MemberPanel) -> Fact:
    files, limit, ratio = panel.open_files, panel.max_open_files, panel.open_files_ratio
    if ratio is None:
        return Fact("open_files", "open files", f"{files:,} (no limit)")
    text = f"{files:,} / {limit:,} ({ratio:.0%})"
    return Fact("open_files", "open files", text, _level(ratio, OPEN_FILES_LEVELS))


def _replica_lag(panel: MemberPanel) -> Fact:
    lag = panel.replica_lag_max
    if lag is None:
        return Fact("replica_lag", "replica lag", "no stream")
    level: Level = "bad" if lag > REPLICA_LAG_LIMIT else "warn" if lag > 0 else "ok"
    return Fact("replica_lag", "replica lag", fmt.plural(lag, "record"), level)


def panel_facts(panel: MemberPanel | None) -> list[Fact]:
    """The facts of a member's panel, in reading order; none without a panel."""
    if panel is None:
        return []
    window = f"{fmt.number(panel.window_seconds)} s"
    cpu = panel.cpu_percent
    lag, lag_max = panel.loop_lag_seconds, panel.loop_lag_max_seconds
    p50, p99 = panel.flush_delay_p50_seconds, panel.flush_delay_p99_seconds
    flushes = panel.flushes_window
    slow, slow_total = panel.slow_consumers_window, panel.slow_consumers_total
    flush_text = (
        f"≤{fmt.latency(p50)} / ≤{fmt.latency(p99)}" if flushes else f"no flush in {window}"
    )
    return [
        Fact("cpu", "CPU", fmt.DASH if cpu is None else f"{cpu:.1f} %"),
        Fact("rss", "memory (RSS)", fmt.compact(panel.rss_bytes, "bytes")),
        _open_files(panel),
        Fact(
            "loop_lag",
            "loop lag (max)",
            f"{fmt.latency(lag)} ({fmt.latency(lag_max)})",
            _level(lag_max, LOOP_LAG_LEVELS),
        ),
        Fact("flush_delay", "flush p50 / p99", flush_text, _level(p99, FLUSH_P99_LEVELS)),
        Fact(
            "slow_consumers",
            f"slow consumers {window}",
            f"{fmt.count(slow)} ({fmt.count(slow_total)} total)",
            "warn" if slow else "ok",
        ),
        _replica_lag(panel),
    ]


def render_panel(panel: MemberPanel | None) -> html.Div:
    """The panel block of a member card (empty for a member without one)."""
    facts = panel_facts(panel)
    return html.Div(
        [
            html.Div(
                [html.Span(f.name, className="fact-name"), html.Span(f.value)],
                className=f"fact panel-fact panel-{f.level}",
                **attrs({"data-panel": f.key, "data-level": f.level}),
            )
            for f in facts
        ],
        className="facts member-panel",
    )
