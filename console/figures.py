"""Plotly figures of the console (pure: values in, figure out), in the console's dark theme."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .format import chart_time, compact, duration, is_bytes, iso_unix, label, scope_label, unit
from .provider import CLUSTER, JobRun, TrendPoint

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

LIVE_POINTS = 300  # five minutes of one-second samples per live chart
# Every live indicator is a whole number a second (sessions, messages, bytes): a live axis
# always reaches at least this high, so plotly never picks a tick step below 1 (an empty or
# flat axis used to read 0, 500m, 1 -- "500mB" on a byte chart).
LIVE_AXIS_FLOOR = 10


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


def live_figure(
    indicator: str,
    series: Sequence[str],
    first: Sequence[tuple[int | None, float | None]] = (),
) -> go.Figure:
    """A live chart: one trace per series (the cluster filled, members as lines).

    ``first`` holds each series' first point, if it has one.
    """
    several = len(series) > 1
    figure = go.Figure(layout=_layout(170, showlegend=several))
    if several:
        figure.update_layout(margin={"t": 22})
    for index, name in enumerate(series):
        ts, value = first[index] if index < len(first) else (None, None)
        color = SERIES[index % len(SERIES)]
        cluster = name == CLUSTER
        figure.add_trace(
            go.Scatter(
                x=[] if ts is None else [chart_time(ts)],
                y=[] if ts is None else [value],
                name=scope_label(name),
                mode="lines",
                line={"color": color, "width": 2 if cluster else 1.3, "shape": "hv"},
                fill="tozeroy" if cluster else None,
                fillcolor=_rgba(color, 0.12) if cluster else None,
                hovertemplate=f"%{{y:.4~s}} {unit(indicator)}<extra>{scope_label(name)}</extra>",
            )
        )
    figure.update_yaxes(**live_value_axis(indicator))
    figure.update_xaxes(tickformat="%H:%M:%S")
    return figure


def live_value_axis(indicator: str) -> dict[str, object]:
    """The y axis of a live chart: from 0 to at least :data:`LIVE_AXIS_FLOOR`, so no tick is a
    fraction of a unit; SI prefixes (``1.5k``, ``2M``), bytes with a ``B`` (``50kB``)."""
    axis: dict[str, object] = {
        "autorangeoptions": {"minallowed": 0, "include": [0, LIVE_AXIS_FLOOR]},
        "tickformat": "~s",
    }
    if is_bytes(indicator):
        axis["ticksuffix"] = "B"
    return axis


def trend_figure(
    points: Sequence[TrendPoint], indicator: str, window: str, scope: str
) -> go.Figure:
    """A trend series: average as a line, the ±σ band around it, the maximum dotted."""
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
    xs = [chart_time(p.as_of) for p in points]
    avg = [p.avg for p in points]
    upper = [None if p.avg is None else p.avg + (p.stddev or 0.0) for p in points]
    lower = [None if p.avg is None else max(0.0, p.avg - (p.stddev or 0.0)) for p in points]
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
            customdata=[[p.stddev, p.count] for p in points],
            hovertemplate="avg %{y:.4~s}  σ %{customdata[0]:.3~s}  n=%{customdata[1]}"
            "<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=xs,
            y=[p.max for p in points],
            mode="lines",
            name="max",
            line={"color": "#f472b6", "width": 1.5, "dash": "dot"},
            hovertemplate="max %{y:.4~s}<extra></extra>",
        )
    )
    figure.update_yaxes(
        title={"text": f"{label(indicator)} ({unit(indicator)})", "font": {"color": MUTED}},
        tickformat="~s",
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
    if not points:
        figure.add_annotation(
            text="no trend points in this range",
            showarrow=False,
            font={"color": MUTED, "size": 14},
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
    return figure


def jobs_figure(runs: Sequence[JobRun]) -> go.Figure:
    """Run durations, oldest left, colored by status."""
    ordered = sorted(runs, key=lambda r: r.id)
    figure = go.Figure(layout=_layout(200, showlegend=False, bargap=0.35))
    figure.add_trace(
        go.Bar(
            x=[f"#{r.id}" for r in ordered],
            y=[r.duration or 0.0 for r in ordered],
            marker={"color": [STATUS_COLORS.get(r.status, MUTED) for r in ordered]},
            customdata=[[r.status, duration(r.duration), r.started_at or ""] for r in ordered],
            hovertemplate="run %{x}: %{customdata[0]}, %{customdata[1]}"
            "<br>%{customdata[2]}<extra></extra>",
        )
    )
    figure.update_yaxes(title={"text": "seconds", "font": {"color": MUTED}})
    figure.update_xaxes(type="category")
    figure.update_layout(hovermode="closest")
    return figure


def run_start(run: JobRun) -> float | None:
    return iso_unix(run.started_at)


def reading(value: float | None, indicator: str) -> str:
    """The big number on an indicator card."""
    return compact(value, indicator)
