"""Plotly figures of the console (pure: values in, figure out), in the console's dark theme."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from pushgrid.ops.api.jobs import JobRunOut
from pushgrid.ops.api.trends import TrendPointOut

from .format import (
    ChartTrace,
    byte_unit,
    chart_time,
    compact,
    duration,
    is_bytes,
    kind,
    label,
    moment,
    scope_label,
    second,
    unit,
    unix_of,
)

# One palette for CSS and charts (console/assets/console.css uses the same values).
BACKGROUND = "#0b1220"
PANEL = "#111a2e"
GRID = "#1f2a44"
TEXT = "#dbe4f3"
MUTED = "#8b9bb8"
ACCENT = "#38bdf8"
GOOD = "#34d399"
WARN = "#fbbf24"
BAD = "#f87171"
SERIES = ("#38bdf8", "#a78bfa", "#f472b6", "#34d399", "#fbbf24", "#fb923c", "#22d3ee")
STATUS_COLORS = {"succeeded": GOOD, "failed": BAD, "running": ACCENT, "queued": MUTED}

# Every live indicator is a whole number a second (sessions, messages, bytes): a live axis
# always reaches at least this high, so plotly never picks a tick step below 1 (an empty or
# flat axis used to read 0, 500m, 1 -- "500mB" on a byte chart).
LIVE_AXIS_FLOOR = 10
# Time ticks by the step plotly picks for the data drawn (ms): seconds while a tick is under a
# minute, minutes under a day, then days: never the same "01:16" under every tick.
TIME_TICKS = (
    {"dtickrange": [None, 60_000], "value": "%H:%M:%S"},
    {"dtickrange": [60_000, 86_400_000], "value": "%H:%M"},
    {"dtickrange": [86_400_000, None], "value": "%d %b"},
)


def _layout(height: int, **extra: object) -> go.Layout:
    return go.Layout(
        height=height,
        margin={"l": 48, "r": 12, "t": 8, "b": 28},
        paper_bgcolor=PANEL,
        plot_bgcolor=PANEL,
        font={"color": TEXT, "family": "Inter, system-ui, sans-serif", "size": 11},
        xaxis={"gridcolor": GRID, "zeroline": False, "linecolor": GRID},
        yaxis={"gridcolor": GRID, "zeroline": False, "rangemode": "tozero", "linecolor": GRID},
        legend={
            "orientation": "h",
            "y": 1.0,
            "yanchor": "bottom",
            "x": 0,
            "font": {"size": 10},
            "bgcolor": "rgba(0,0,0,0)",
        },
        hovermode="x unified",
        **extra,
    )


def _rgba(color: str, alpha: float) -> str:
    red, green, blue = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def time_axis(figure: go.Figure, start: int, end: int) -> go.Figure:
    """The selected range on the time axis, ``start`` to ``end`` (Unix seconds): one point is
    drawn in its place in the range, not on an axis a millisecond wide (issue 34)."""
    figure.update_xaxes(range=[chart_time(start), chart_time(end)], autorange=False)
    return figure


def say_empty(figure: go.Figure, why: str) -> go.Figure:
    """No axes around nothing: the reason the chart is empty, in its middle."""
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    figure.add_annotation(
        text=why,
        showarrow=False,
        font={"color": MUTED, "size": 11},
        xref="paper",
        yref="paper",
        x=0.5,
        y=0.5,
    )
    return figure


def live_figure(
    indicator: str,
    traces: Sequence[ChartTrace],
    byte_unit: str = "B",
    empty: str | None = None,
) -> go.Figure:
    """A chart of one indicator: one line per trace (the first, the cluster, filled).

    Byte values come already divided into ``byte_unit`` (``format.byte_unit``), so the axis,
    the hover and the card read the same KiB/MiB. ``empty``: why there is nothing to draw,
    shown instead of the axes when no trace has a point."""
    several = len(traces) > 1
    figure = go.Figure(layout=_layout(170, showlegend=several))
    if several:
        figure.update_layout(margin={"t": 22})
    for index, trace in enumerate(traces):
        color = SERIES[index % len(SERIES)]
        first = index == 0
        figure.add_trace(
            go.Scatter(
                x=list(trace.x),
                y=list(trace.y),
                name=scope_label(trace.name),
                mode="lines",
                line={"color": color, "width": 2 if first else 1.3, "shape": "hv"},
                fill="tozeroy" if first else None,
                fillcolor=_rgba(color, 0.12) if first else None,
                connectgaps=False,
                hovertemplate=f"{hover_format(indicator, byte_unit)}"
                f"<extra>{scope_label(trace.name)}</extra>",
            )
        )
    figure.update_yaxes(**live_value_axis(indicator, byte_unit))
    # four ticks at most: a card is ~250 px wide, more would be turned sideways
    figure.update_xaxes(tickformatstops=TIME_TICKS, automargin=True, nticks=4)
    if empty is not None and not any(y is not None for t in traces for y in t.y):
        say_empty(figure, empty)
    return figure


def hover_format(indicator: str, byte_unit: str = "B") -> str:
    """The hover text of a value, as :func:`console.format.number` writes it."""
    how = kind(indicator)
    if how == "bytes":
        return f"%{{y:.4~g}} {byte_unit}"
    if how == "rate":
        return f"%{{y:.3~s}} {unit(indicator)}"
    return f"%{{y:,.1~f}} {unit(indicator)}"


def live_value_axis(indicator: str, byte_unit: str = "B") -> dict[str, object]:
    """The y axis of a live chart, in the units of :func:`console.format.number`: bytes in
    ``byte_unit`` (``512 B``, ``1.5 KiB``, ``20 MiB``: never kB or MB), rates and counts with SI
    prefixes (``1.5k``). In whole units (bytes, counts, rates) the axis reaches at least
    :data:`LIVE_AXIS_FLOOR`, so no tick is a fraction of a unit."""
    floor = LIVE_AXIS_FLOOR if byte_unit == "B" or not is_bytes(indicator) else 1
    axis: dict[str, object] = {
        "autorangeoptions": {"minallowed": 0, "include": [0, floor]},
        "tickformat": "~s",
        "automargin": True,
    }
    if is_bytes(indicator):
        axis["tickformat"] = "~g"
        axis["ticksuffix"] = f" {byte_unit}"
    return axis


def trend_figure(
    points: Sequence[TrendPointOut],
    indicator: str,
    window: str,
    scope: str,
    span: tuple[int, int] | None = None,
) -> go.Figure:
    """A trend series: average as a line, the ±σ band around it, the maximum dotted; ``span``:
    the selected range (Unix seconds) on the time axis."""
    figure = go.Figure(layout=_layout(440, showlegend=True))
    if not points:  # no axes from -1 to 6 around nothing: say so (the summary says when)
        figure.update_xaxes(visible=False)
        figure.update_yaxes(visible=False)
        figure.add_annotation(
            text="no trend points yet",
            showarrow=False,
            font={"size": 15},
            x=0.5,
            y=0.5,
            xref="paper",
            yref="paper",
        )
        return figure
    peak = max((v for p in points for v in (p.max, p.avg) if v is not None), default=0.0)
    divisor, byte_name = byte_unit(peak) if is_bytes(indicator) else (1.0, "B")

    def scaled(value: float | None) -> float | None:
        return None if value is None else value / divisor

    xs = [chart_time(second(p.as_of)) for p in points]
    avg = [scaled(p.avg) for p in points]
    spread = [(p.stddev or 0.0) / divisor for p in points]
    upper = [None if a is None else a + d for a, d in zip(avg, spread, strict=True)]
    lower = [None if a is None else max(0.0, a - d) for a, d in zip(avg, spread, strict=True)]
    value = hover_format(indicator, byte_name).replace("%{y", "%{customdata[0]")
    figure.add_trace(
        go.Scatter(
            x=xs, y=upper, mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip"
        )
    )
    figure.add_trace(
        go.Scatter(
            x=xs,
            y=lower,
            mode="lines",
            line={"width": 0},
            fill="tonexty",
            fillcolor=_rgba(ACCENT, 0.18),
            name="avg ± σ",
            hoverinfo="skip",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=xs,
            y=avg,
            mode="lines+markers",
            name="average",
            line={"color": ACCENT, "width": 2},
            marker={"size": 5},
            customdata=[[d, p.count] for d, p in zip(spread, points, strict=True)],
            hovertemplate="avg "
            + hover_format(indicator, byte_name)
            + "  σ "
            + value
            + "  n=%{customdata[1]}<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=xs,
            y=[scaled(p.max) for p in points],
            mode="lines",
            name="max",
            line={"color": "#f472b6", "width": 1.5, "dash": "dot"},
            hovertemplate="max " + hover_format(indicator, byte_name) + "<extra></extra>",
        )
    )
    shown_unit = byte_name + "/s" if is_bytes(indicator) else unit(indicator)
    figure.update_yaxes(
        title={"text": f"{label(indicator)} ({shown_unit})", "font": {"color": MUTED}},
        **live_value_axis(indicator, byte_name),
    )
    figure.update_layout(
        title={
            "text": f"{label(indicator)} · {window} window · {scope_label(scope)}",
            "font": {"size": 13},
            "x": 0.01,
            "y": 0.98,
        },
        margin={"t": 48},
    )
    if span is not None:
        time_axis(figure, *span)
    return figure


def jobs_figure(runs: Sequence[JobRunOut]) -> go.Figure:
    """Run durations, oldest left, colored by status."""
    ordered = sorted(runs, key=lambda r: r.id)
    figure = go.Figure(layout=_layout(200, showlegend=False, bargap=0.35))
    figure.add_trace(
        go.Bar(
            x=[f"#{r.id}" for r in ordered],
            y=[r.duration_seconds or 0.0 for r in ordered],
            marker={"color": [STATUS_COLORS.get(r.status, MUTED) for r in ordered]},
            customdata=[
                [r.status, duration(r.duration_seconds), moment(r.started_at)] for r in ordered
            ],
            hovertemplate="run %{x}: %{customdata[0]}, %{customdata[1]}"
            "<br>%{customdata[2]}<extra></extra>",
        )
    )
    figure.update_yaxes(title={"text": "seconds", "font": {"color": MUTED}})
    figure.update_xaxes(type="category")
    figure.update_layout(hovermode="closest")
    return figure


def run_start(run: JobRunOut) -> float | None:
    return unix_of(run.started_at)


def reading(value: float | None, indicator: str) -> str:
    """The big number on an indicator card."""
    return compact(value, indicator)


def slo_figures(
    histories: Sequence[tuple[str, Sequence[tuple[str, float, float]]]],
    fast: float,
    slow: float,
) -> tuple[go.Figure, go.Figure]:
    """The objectives' error budget left (percent) and burn rate over their periods, one line
    per objective (``(name, [(iso time, budget left, burn rate), ...])``); the burn chart
    carries the two alerts' thresholds (console/pages/slos.py, ADR 055)."""
    budget, burn = go.Figure(layout=_layout(220)), go.Figure(layout=_layout(220))
    for index, (name, points) in enumerate(histories):
        color = SERIES[index % len(SERIES)]
        times = [at for at, _, _ in points]
        line = {"color": color, "width": 2}
        budget.add_scatter(x=times, y=[100 * left for _, left, _ in points], name=name, line=line)
        burn.add_scatter(x=times, y=[rate for _, _, rate in points], name=name, line=line)
    budget.update_yaxes(ticksuffix=" %", rangemode="normal")
    budget.add_hline(y=0, line={"color": BAD, "width": 1, "dash": "dot"})
    for level, color, text in ((fast, BAD, "fast burn"), (slow, WARN, "slow burn")):
        burn.add_hline(
            y=level,
            line={"color": color, "width": 1, "dash": "dash"},
            annotation_text=f"{text} {level:g}x",
            annotation_font={"color": color, "size": 10},
        )
    if not any(points for _, points in histories):
        say_empty(budget, "no events recorded yet")
        say_empty(burn, "no events recorded yet")
    return budget, burn


#: latency scopes one chart draws (the cluster and the first members): past that the lines blur
LATENCY_SCOPES = 5


def latency_figure(history: Sequence[Mapping[str, Any]]) -> go.Figure:
    """p99 (solid) and p50 (dotted) in milliseconds, log scale, per scope over the points of
    ``console.pages.delivery_latency.extend_history`` (``{"t": s, scope: [p50, p99]}``)."""
    figure = go.Figure(layout=_layout(260, showlegend=True))
    scopes = list(dict.fromkeys(k for point in history for k in point if k != "t"))
    if not scopes:
        return say_empty(figure, "no latency reported yet: clients report every few seconds")
    times = [chart_time(int(point["t"])) for point in history]
    for color, scope in zip(SERIES, scopes[:LATENCY_SCOPES], strict=False):
        for index, dash, name in ((1, "solid", "p99"), (0, "dot", "p50")):
            values = [
                None
                if point.get(scope) is None or point[scope][index] is None
                else point[scope][index] * 1000
                for point in history
            ]
            figure.add_trace(
                go.Scatter(
                    x=times,
                    y=values,
                    mode="lines",
                    name=f"{scope.removeprefix('member:')} {name}",
                    line={"color": color, "dash": dash, "width": 1.5},
                    hovertemplate="%{y:.3g} ms",
                )
            )
    figure.update_yaxes(type="log", title={"text": "ms"}, rangemode="normal")
    return time_axis(figure, int(history[0]["t"]), int(history[-1]["t"]) + 1)
