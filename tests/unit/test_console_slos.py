"""The Objectives page's pieces (console/pages/slos.py): the table and the two charts, from
admin API answers (ADR 055)."""

from __future__ import annotations

from typing import Any

from pushgrid.console.pages.slos import charts, render_table, what


def _item(name: str, fast: float, slow: float, left: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": 1,
        "name": name,
        "kind": "latency",
        "target": 0.99,
        "period_days": 30,
        "threshold_ms": 50.0,
        "threshold_edge_ms": 39.811,
        "status": {
            "good": 90,
            "total": 100,
            "ratio": 0.9,
            "budget_remaining": left,
            "burn_rates": {"5m": fast, "30m": slow, "1h": fast, "6h": slow},
            "fast_burn": fast,
            "slow_burn": slow,
        },
        **extra,
    }


def _rows(component: Any) -> list[Any]:
    return list(component.children[1].children)


def test_the_table_marks_what_burns() -> None:
    document = {
        "items": [
            _item("hot", 20.0, 10.0, -9.0),
            _item("warm", 3.0, 7.0, 0.2),
            _item("calm", 0.0, 0.0, 1.0, kind="loss", threshold_ms=None, threshold_edge_ms=None),
        ]
    }
    rows = _rows(render_table(document))
    assert [r.to_plotly_json()["props"]["data-burning"] for r in rows] == ["fast", "slow", "no"]
    text = str(rows[0].to_plotly_json())
    assert "-900.0 %" in text  # budget overspent 9 times
    assert "20.00x" in text
    assert what(document["items"][0]) == "latency <= 39.8 ms"  # the edge it is judged at
    assert what(document["items"][2]) == "no loss"
    assert what({**document["items"][2], "member": "m2"}) == "no loss, on m2"  # one member's
    scoped = {**document["items"][2], "member": "m2", "pattern": "/a/*"}
    assert what(scoped) == "no loss, under /a/*, on m2"
    empty = _rows(render_table({"items": []}))
    assert "POST /api/v1/slos" in str(empty[0].to_plotly_json())


class _Provider:
    def __init__(self, points: list[dict[str, Any]]) -> None:
        self.points = points
        self.asked: list[int] = []

    def slos(self) -> dict[str, Any]:
        return {"items": []}

    def slo_history(self, objective_id: int, points: int = 120) -> dict[str, Any]:
        self.asked.append(objective_id)
        return {"points": self.points}


def test_the_charts_draw_each_objective_and_the_thresholds() -> None:
    points = [
        {"at": "2026-11-28T05:00:00Z", "budget_remaining": 1.0, "burn_rate": 0.0},
        {"at": "2026-11-28T05:01:00Z", "budget_remaining": 0.5, "burn_rate": 20.0},
    ]
    provider = _Provider(points)
    budget, burn = charts(provider, [_item("hot", 20.0, 10.0, 0.5)])
    assert provider.asked == [1]
    assert list(budget.data[0].y) == [100.0, 50.0]  # percent
    assert list(burn.data[0].y) == [0.0, 20.0]
    levels = sorted(shape.y0 for shape in burn.layout.shapes)
    assert levels == [6.0, 14.4]
    empty_budget, _ = charts(_Provider([]), [_item("new", 0.0, 0.0, 1.0)])
    assert "no events recorded yet" in str(empty_budget.layout.annotations)
