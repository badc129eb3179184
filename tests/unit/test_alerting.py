"""The alert state machine (admin_api/alerting.py) and the Prometheus export, as pure code."""

from __future__ import annotations

from datetime import UTC, datetime

from admin_api.alerting import Evaluator, Rule, cluster_readings
from admin_api.rules_export import prometheus_rules, promql
from admin_api.schemas_ops import RuleOut

KEY = ("connected_users", "current", "current")


def rule(**changes: object) -> Rule:
    base: dict[str, object] = {
        "id": 1,
        "name": "Busy",
        "indicator": "connected_users",
        "window": "current",
        "stat": "max",
        "comparison": ">",
        "threshold": 10.0,
        "for_seconds": 5.0,
        "severity": "warning",
        "scope": "member",
    }
    base.update(changes)
    return Rule(**base)  # type: ignore[arg-type]


def states(
    evaluator: Evaluator, rules: list[Rule], values: dict[str, float | None], now: float
) -> list[tuple[str, str]]:
    readings = {member: {KEY: value} for member, value in values.items()}
    return [(c.alert.target, c.state) for c in evaluator.evaluate(rules, readings, now)]


def test_pending_then_firing_after_for_then_resolved() -> None:
    ev = Evaluator()
    rules = [rule()]
    assert states(ev, rules, {"m1": 11, "m2": 3}, 100) == [("m1", "pending")]
    assert states(ev, rules, {"m1": 12, "m2": 3}, 104) == []
    assert states(ev, rules, {"m1": 12, "m2": 3}, 105) == [("m1", "firing")]
    assert [a.state for a in ev.active()] == ["firing"]
    assert states(ev, rules, {"m1": 9, "m2": 3}, 106) == [("m1", "resolved")]
    assert ev.active() == []


def test_for_zero_fires_at_once_and_pending_can_resolve_without_firing() -> None:
    ev = Evaluator()
    assert states(ev, [rule(for_seconds=0)], {"m1": 11}, 1) == [("m1", "firing")]
    ev2 = Evaluator()
    assert states(ev2, [rule()], {"m1": 11}, 1) == [("m1", "pending")]
    assert states(ev2, [rule()], {"m1": 1}, 2) == [("m1", "resolved")]


def test_missing_data_keeps_the_state() -> None:
    ev = Evaluator()
    rules = [rule(for_seconds=0)]
    assert states(ev, rules, {"m1": 11}, 1) == [("m1", "firing")]
    assert states(ev, rules, {"m1": None}, 2) == []
    assert states(ev, rules, {}, 3) == [("m1", "resolved")]  # the member is gone


def test_cluster_scope_sums_members_and_deleted_rules_resolve() -> None:
    ev = Evaluator()
    cluster = rule(id=2, name="ClusterBusy", scope="cluster", for_seconds=0)
    assert states(ev, [cluster], {"m1": 6, "m2": 5}, 1) == [("cluster", "firing")]
    assert states(ev, [], {"m1": 6, "m2": 5}, 2) == [("cluster", "resolved")]
    assert cluster_readings({"a": {KEY: 1.0}, "b": {KEY: None}, "c": {KEY: 2.5}}) == {KEY: 3.5}


def _out(**changes: object) -> RuleOut:
    data: dict[str, object] = {
        "id": 1,
        "name": "Busy",
        "indicator": "outgoing_messages_per_second",
        "window": "5m",
        "stat": "avg",
        "comparison": ">=",
        "threshold": 1500.5,
        "for": 30,
        "severity": "critical",
        "scope": "cluster",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        "created_by": "t",
    }
    data.update(changes)
    return RuleOut.model_validate(data)


def test_promql_and_rules_file() -> None:
    assert promql(_out()) == (
        'sum(pushgrid_indicator_window{indicator="outgoing_messages_per_second",'
        'window="5m",stat="avg"}) >= 1500.5'
    )
    assert promql(_out(window="current", scope="member")) == (
        'pushgrid_indicator{indicator="outgoing_messages_per_second"} >= 1500.5'
    )
    text = prometheus_rules([_out(), _out(id=2, name="Off", enabled=False)])
    assert 'alert: "Busy"' in text
    assert "for: 30s" in text
    assert "Off" not in text
    assert prometheus_rules([]).endswith("rules: []\n")
