"""The Overview's member panel (console/member_panel.py): facts, formats, levels, and the panel in
a member card (values as the admin API's member view gives them)."""

from __future__ import annotations

from typing import Any

from dash import html

from pushgrid.console.member_panel import REPLICA_LAG_LIMIT, panel_facts, render_panel
from pushgrid.console.pages import overview
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.panel import MemberPanel

PANEL: dict[str, Any] = {
    "window_seconds": 60.0,
    "cpu_percent": 12.345,
    "cpu_seconds_total": 30.5,
    "rss_bytes": 52_428_800,
    "open_files": 850,
    "max_open_files": 1000,
    "loop_lag_seconds": 0.0012,
    "loop_lag_max_seconds": 0.3,
    "flush_delay_p50_seconds": 0.001,
    "flush_delay_p99_seconds": 0.005,
    "flushes_window": 420,
    "slow_consumers_window": 2,
    "slow_consumers_total": 7,
    "replica_lag_max": 1500,
}


def _facts(panel: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    typed = None if panel is None else MemberPanel.model_validate(panel)
    return {f.key: (f.value, f.level) for f in panel_facts(typed)}


def test_panel_facts_format_and_levels() -> None:
    facts = _facts(PANEL)
    assert facts["cpu"] == ("12.3 %", "ok")
    assert facts["rss"] == ("50 MiB", "ok")
    assert facts["open_files"] == ("850 / 1,000 (85%)", "warn")
    assert facts["loop_lag"] == ("1.2 ms (300 ms)", "warn")
    assert facts["flush_delay"] == ("≤1 ms / ≤5 ms", "ok")
    assert facts["slow_consumers"] == ("2 (7 total)", "warn")
    assert facts["replica_lag"] == ("1,500 records", "bad")  # past the health model's limit


def test_panel_facts_read_through_the_one_formatter() -> None:
    """Issue 34: a loop lag of 20.2 s read ``2.02e+04 ms``, a replica lag of one "1 records"."""
    facts = _facts({**PANEL, "loop_lag_seconds": 20.2, "loop_lag_max_seconds": 20.2,
                    "replica_lag_max": 1})  # fmt: skip
    assert facts["loop_lag"][0] == "20.2 s (20.2 s)"
    assert facts["replica_lag"][0] == "1 record"


def test_panel_facts_without_measures() -> None:
    assert panel_facts(None) == []
    quiet = _facts(
        {
            **PANEL,
            "cpu_percent": None,
            "max_open_files": 0,
            "flushes_window": 0,
            "flush_delay_p50_seconds": None,
            "flush_delay_p99_seconds": None,
            "slow_consumers_window": 0,
            "replica_lag_max": None,
            "loop_lag_max_seconds": 2.0,
        }
    )
    assert quiet["cpu"] == ("—", "ok")
    assert quiet["open_files"] == ("850 (no limit)", "ok")
    assert quiet["flush_delay"] == ("no flush in 60 s", "ok")
    assert quiet["slow_consumers"][1] == "ok"
    assert quiet["replica_lag"] == ("no stream", "ok")
    assert quiet["loop_lag"][1] == "bad"


def _panel_keys(component: Any) -> list[str]:
    found: list[str] = []
    if isinstance(component, html.Div) and getattr(component, "data-panel", None):
        found.append(getattr(component, "data-panel"))
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found += _panel_keys(child)
    return found


def member_of(item: dict[str, Any]) -> MemberOut:
    """A ``GET /members`` item as the console decodes it (the fields no test here looks at
    filled in)."""
    return MemberOut.model_validate(
        {"source": "config", "client_url": None, "has_credentials": False} | item
    )


def test_member_card_shows_the_panel_of_a_member_that_is_up() -> None:
    up = member_of({"name": "m1", "monitor_url": "http://a", "reachable": True, "panel": PANEL})
    down = member_of({"name": "m2", "monitor_url": "http://b", "reachable": False, "error": "x"})
    cards = overview.render_members([up, down])
    assert _panel_keys(cards[0]) == [
        "cpu",
        "rss",
        "open_files",
        "loop_lag",
        "flush_delay",
        "slow_consumers",
        "replica_lag",
    ]
    assert _panel_keys(cards[1]) == []
    assert _panel_keys(render_panel(None)) == []


def test_replica_lag_level_is_the_health_model_s() -> None:
    from pushgrid.metrics.health import STREAM_LAG_LIMIT

    assert REPLICA_LAG_LIMIT == STREAM_LAG_LIMIT


def test_a_member_card_keeps_its_typed_panel_through_the_dash_store() -> None:
    member = member_of({"name": "m1", "monitor_url": "http://a", "reachable": True, "panel": PANEL})
    assert isinstance(member.panel, MemberPanel)
    assert member.panel.open_files_ratio == 0.85
    stored = member.model_dump(mode="json")
    assert stored["panel"] == PANEL  # plain JSON for Dash
    assert MemberOut.model_validate(stored) == member
