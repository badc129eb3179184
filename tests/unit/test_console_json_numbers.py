"""Console values survive the browser: JavaScript has one number type, 2001.0 comes back 2001."""

from __future__ import annotations

import json

from console_values import indicator, moments, stat_row

from pushgrid.console.provider import WindowStatistics
from pushgrid.ops.api.live import LiveIndicator
from pushgrid.ops.api.trends import TrendPointOut


def through_the_browser(data: object) -> object:
    """What a dcc.Store gives back: JSON as JavaScript writes it (a whole float loses its .0)."""
    text = json.dumps(data)
    return json.loads(text.replace(".0,", ",").replace(".0}", "}").replace(".0]", "]"))


def test_a_window_statistics_row_keeps_its_floats() -> None:
    stats = WindowStatistics(
        "cluster",
        1795854600,
        "2026-11-28T08:00:00Z",
        False,
        7200.0,
        [stat_row("connected_users", "1m", 60, 2001.0, 1000.0, 100.5, 1.0)],
    )
    back = WindowStatistics.from_json(through_the_browser(stats.to_json()))  # type: ignore[arg-type]
    assert back == stats
    row = back.rows[0]
    assert [repr(row.max), repr(row.avg), repr(row.coverage)] == ["2001.0", "1000.0", "1.0"]
    assert type(back.as_of) is int
    assert type(row.count) is int


def test_live_and_trend_values_keep_their_floats() -> None:
    live = indicator("connected_users", 3.0, {"1m": moments(60, 3.0, 2.0, None)})
    back = LiveIndicator.model_validate(through_the_browser(live.model_dump(mode="json")))
    assert repr(back.current) == "3.0"
    assert repr(back.windows["1m"].max) == "3.0"
    assert back.windows["1m"].stddev is None
    point = TrendPointOut.model_validate(
        {"as_of": 1795854600, "count": 60, "coverage": 1.0, "max": 4.0, "avg": 2.0}
        | {"stddev": 0.0, "run_id": None}
    )
    again = TrendPointOut.model_validate(through_the_browser(point.model_dump(mode="json")))
    assert again == point
    assert repr(again.max) == "4.0"
    assert repr(again.stddev) == "0.0"
