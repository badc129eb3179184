"""The alert state machine (admin_api/alerting.py) and the Prometheus export, as pure code."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pushgrid.admin_api.alerting import Evaluator, Rule, cluster_readings
from pushgrid.admin_api.rules_export import prometheus_rules, promql
from pushgrid.admin_api.schemas_ops import RuleIn, RuleOut
from pushgrid.admin_api.services.alerts import AlertRunner, RuleService
from pushgrid.metrics import sqlstore
from pushgrid.server.config import load_settings

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


def test_a_restarted_runner_takes_back_open_alerts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'alerts.db'}"
    sqlstore.upgrade(url)
    settings = load_settings(None, environ={}, database=url)
    factory = sqlstore.make_session_factory(url)
    with factory() as session:
        service = RuleService(session)
        busy = service.create(
            RuleIn.model_validate(
                {"name": "Busy", "indicator": "connected_users", "threshold": 10, "for": 0}
            ),
            "t",
        )
        gone = service.create(
            RuleIn.model_validate(
                {"name": "Gone", "indicator": "connected_users", "threshold": 10, "for": 0}
            ),
            "t",
        )
    first = AlertRunner(settings.alerts, factory, lambda _db: [])
    readings = {"m1": {KEY: 50.0}}
    with factory() as session:
        rules = RuleService(session).enabled()
        RuleService(session).record(first.evaluator.evaluate(rules, readings, 100.0))
        RuleService(session).delete(gone.id)

    second = AlertRunner(settings.alerts, factory, lambda _db: [])  # the admin API restarted
    resolved = second.restore()
    assert [(c.alert.rule.name, c.state) for c in resolved] == [("Gone", "resolved")]
    assert [(a.rule.name, a.state, a.target) for a in second.evaluator.active()] == [
        ("Busy", "firing", "m1")
    ]
    with factory() as session:
        rules = RuleService(session).enabled()
    again = second.evaluator.evaluate(rules, readings, 101.0)
    assert again == []  # still firing: not announced a second time
    changes = second.evaluator.evaluate(rules, {"m1": {KEY: 1.0}}, 102.0)
    assert [(c.alert.rule.id, c.state) for c in changes] == [(busy.id, "resolved")]
    with factory() as session:
        states = [e.state for e in reversed(RuleService(session).history(10)) if e.rule == "Gone"]
    assert states == ["firing", "resolved"]
    factory.kw["bind"].dispose()
