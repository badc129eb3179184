"""The console marks windows with little data and scopes of nodes that left (issue 21 item 7)."""

from __future__ import annotations

from typing import Any

from console_values import stat_row
from dash.development.base_component import Component

from pushgrid.console import format as fmt
from pushgrid.console.figures import trend_figure
from pushgrid.console.pages import statistics, trends
from pushgrid.console.provider import CLUSTER, WindowStatistics
from pushgrid.ops.api.statistics import WindowStatOut


def _stats(rows: list[WindowStatOut]) -> WindowStatistics:
    return WindowStatistics(CLUSTER, 1000, "2026-11-22T14:00:00+00:00", False, 900.0, rows)


def _cells(component: Component) -> list[Any]:
    """Every table cell (Td) of a rendered table, depth first."""
    found: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, Component):
            if type(node).__name__ == "Td":
                found.append(node)
            walk(getattr(node, "children", None))
        elif isinstance(node, list | tuple):
            for child in node:
                walk(child)

    walk(component)
    return found


def test_a_window_with_little_data_is_marked_and_says_how_much_it_covers() -> None:
    rows = [
        stat_row("connected_users", "5m", 240, 5.0, 2.5, 0.5, coverage=0.8),
        stat_row("connected_users", "1m", 60, 5.0, 2.5, 0.5, coverage=1.0),
    ]
    cells = {
        (c.__dict__.get("data-window"), c.__dict__.get("data-stat")): c
        for c in _cells(statistics.render_table(_stats(rows)))
        if c.__dict__.get("data-indicator") == "connected_users"
    }
    partial, whole = cells[("5m", "avg")], cells[("1m", "avg")]
    assert "partial" in partial.className
    assert "covers 4 min of 5m (80.0%)" in partial.title
    assert partial.__dict__["data-coverage"] == "0.800000"
    assert "partial" not in whole.className
    assert "covers" not in whole.title


def test_the_note_names_the_partial_windows() -> None:
    rows = [
        stat_row("connected_users", "15mo", 240, 5.0, 2.5, 0.5, coverage=0.0001),
        stat_row("connected_users", "5m", 240, 5.0, 2.5, 0.5, coverage=0.8),
        stat_row("connected_users", "1m", 60, 5.0, 2.5, 0.5, coverage=1.0),
    ]
    note = statistics.coverage_note(_stats(rows))
    assert note is not None
    assert note.__dict__["data-partial-windows"] == "5m 15mo"
    assert statistics.coverage_note(_stats(rows[2:])) is None
    assert statistics.coverage_note(None) is None


def test_a_scope_of_a_node_that_is_no_longer_a_member_says_so() -> None:
    options = fmt.scope_options(["cluster", "node:m1", "node:gone"], members=["m1"])
    assert options == [
        {"label": "Cluster", "value": "cluster"},
        {"label": "gone (not a member now)", "value": "node:gone"},
        {"label": "m1", "value": "node:m1"},
    ]


def test_an_empty_trend_says_when_its_first_point_comes() -> None:
    text = trends.first_points_text(now=1_795_363_200 + 1800)  # half past an hour
    assert f"closes at {fmt.timestamp(1_795_363_200 + 3600)}" in text
    figure = trend_figure([], "connected_users", "1h", CLUSTER)
    assert figure.layout.xaxis.visible is False
    assert [a.text for a in figure.layout.annotations] == ["no trend points yet"]
