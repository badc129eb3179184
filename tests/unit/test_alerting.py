"""The alert state machine (admin_api/alerting.py) and the Prometheus export, as pure code."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.admin_api.alerting import (
    MAX_BUCKETS,
    Alert,
    AlertWindow,
    Evaluator,
    Rule,
    cluster_readings,
    hysteresis_ok,
)
from pushgrid.admin_api.rules_export import prometheus_rules, promql
from pushgrid.admin_api.schemas_ops import RuleIn, RuleOut
from pushgrid.admin_api.services.alert_history import HistoryQuery, alert_history
from pushgrid.admin_api.services.alerts import AlertRunner, RuleService
from pushgrid.config import load_settings
from pushgrid.metrics import sqlstore

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


def test_the_average_over_for_fires_once_the_window_is_full_and_clears_after_clear_for() -> None:
    ev = Evaluator()
    rules = [rule()]  # avg over 5 s > 10, clear_for defaults to for (5 s)
    assert states(ev, rules, {"m1": 11, "m2": 3}, 100) == []  # a partial window decides nothing
    assert states(ev, rules, {"m1": 12, "m2": 3}, 104) == []
    assert states(ev, rules, {"m1": 12, "m2": 3}, 105) == [("m1", "firing")]
    assert [a.state for a in ev.active()] == ["firing"]
    assert states(ev, rules, {"m1": 0, "m2": 3}, 106) == []  # avg(12, 12, 0) = 8: clearing
    assert states(ev, rules, {"m1": 0, "m2": 3}, 110) == []  # cleared 4 s < 5 s
    assert states(ev, rules, {"m1": 0, "m2": 3}, 111) == [("m1", "resolved")]
    assert ev.active() == []


def test_a_spike_within_the_window_does_not_fire_and_a_dip_does_not_resolve() -> None:
    ev = Evaluator()
    rules = [rule(for_seconds=4.0)]
    for t in range(100, 110):
        assert states(ev, rules, {"m1": 5}, t) == []
    assert states(ev, rules, {"m1": 20}, 110) == []  # one sample > 10; avg(5, 5, 5, 20) = 8.75
    assert [c for t in range(111, 120) for c in states(ev, rules, {"m1": 5}, t)] == []
    ev2 = Evaluator()
    for t in range(100, 110):
        assert states(ev2, rules, {"m1": 5}, t) == []
    assert states(ev2, rules, {"m1": 20}, 110) == []  # avg(5, 5, 5, 20) = 8.75: quiet
    changes = [c for t in range(111, 120) for c in states(ev2, rules, {"m1": 20}, t)]
    assert changes == [("m1", "firing")]
    # a late sample reads 0 then a double one (issue 21: 393 then 12,893 for a steady 4,500)
    assert states(ev2, rules, {"m1": 0}, 120) == []
    assert states(ev2, rules, {"m1": 40}, 121) == []
    assert [a.state for a in ev2.active()] == ["firing"]


def test_clear_threshold_is_hysteresis() -> None:
    ev = Evaluator()
    rules = [rule(for_seconds=0.0, clear_threshold=8.0, clear_for=0.0)]
    assert states(ev, rules, {"m1": 11}, 1) == [("m1", "firing")]
    assert states(ev, rules, {"m1": 9}, 2) == []  # below 10 but above 8: still firing
    assert states(ev, rules, {"m1": 10.5}, 3) == []
    assert states(ev, rules, {"m1": 8}, 4) == [("m1", "resolved")]
    assert hysteresis_ok(">", 10, 8)
    assert hysteresis_ok("<", 10, 12)
    assert hysteresis_ok("==", 1, None)
    assert not hysteresis_ok(">", 10, 12)
    assert not hysteresis_ok("<=", 10, 9)
    assert not hysteresis_ok("!=", 1, 2)


def test_for_zero_fires_at_once_and_a_restored_pending_alert_fires_or_resolves() -> None:
    ev = Evaluator()
    assert states(ev, [rule(for_seconds=0)], {"m1": 11}, 1) == [("m1", "firing")]
    for value, after in ((11.0, "firing"), (1.0, "resolved")):
        ev2 = Evaluator()
        ev2.alerts[(1, "m1")] = Alert(rule(for_seconds=1), "m1", "pending", 0.0, 0.0, 11.0)
        assert states(ev2, [rule(for_seconds=1)], {"m1": value}, 1) == []
        assert states(ev2, [rule(for_seconds=1)], {"m1": value}, 2) == [("m1", after)]


def test_a_window_is_bounded_and_averages_what_it_holds() -> None:
    window = AlertWindow(span=86_400.0, first_seen=0.0)
    for t in range(0, 100_000):
        window.add(float(t), 1.0 if t % 2 else 3.0)
    assert len(window.buckets) <= MAX_BUCKETS + 1
    assert window.average() == pytest.approx(2.0, rel=1e-3)
    assert window.full(100_000.0)
    short = AlertWindow(span=2.0, first_seen=10.0)
    for at, v in ((10.0, 1.0), (11.0, 2.0), (12.0, 6.0)):
        short.add(at, v)
    assert short.average() == 4.0  # (10, 12]: the samples of 11 and 12
    assert not AlertWindow(span=2.0, first_seen=10.0).full(11.0)


# --- hypothesis: a steady load with jitter never flaps -----------------------------------------


@st.composite
def steady_loads(draw: st.DrawFn) -> tuple[Rule, list[tuple[float, float]]]:
    """A rule with hysteresis and a load whose samples stay in a band narrower than its gap,
    read at jittered instants (late, early, skipped seconds)."""
    threshold = draw(st.floats(10, 10_000))
    gap = draw(st.floats(0.05, 0.5)) * threshold
    width = draw(st.floats(0.0, 0.99)) * gap
    low = draw(st.floats(threshold - gap - 2 * width, threshold + gap))
    rule_ = rule(
        for_seconds=draw(st.sampled_from([0.0, 1.0, 5.0, 10.0, 30.0])),
        clear_threshold=threshold - gap,
        clear_for=draw(st.sampled_from([None, 0.0, 3.0])),
        threshold=threshold,
    )
    now = 0.0
    samples = []
    for _ in range(draw(st.integers(1, 80))):
        now += draw(st.sampled_from([0.4, 0.9, 1.0, 1.0, 1.1, 1.6, 3.0]))
        samples.append((now, low + draw(st.floats(0.0, 1.0)) * width))
    return rule_, samples


@settings(max_examples=120, deadline=None)
@given(steady_loads())
def test_a_steady_load_never_flaps(case: tuple[Rule, list[tuple[float, float]]]) -> None:
    rule_, samples = case
    ev = Evaluator()
    seen = [c.state for now, v in samples for c in ev.evaluate([rule_], {"m1": {KEY: v}}, now)]
    assert seen in ([], ["firing"]), seen
    if all(v > rule_.threshold for _, v in samples) and samples[-1][0] - samples[0][0] > (
        rule_.for_seconds
    ):
        assert seen[-1] == "firing"  # above the threshold throughout: it fires, once
    if all(v <= rule_.threshold for _, v in samples):
        assert seen == []


@settings(max_examples=80, deadline=None)
@given(
    st.floats(100, 10_000),
    st.floats(0.0, 0.3),
    st.lists(st.floats(-1.0, 1.0), min_size=30, max_size=120),
)
def test_jitter_around_a_level_below_the_threshold_never_fires(
    level: float, jitter: float, noise: list[float]
) -> None:
    """Single samples cross the threshold (jitter up to 30 %), their 10 s average never does."""
    rule_ = rule(threshold=level * 1.2, for_seconds=10.0)
    ev = Evaluator()
    # a late sample counts the next one's messages: pairs (1 - e, 1 + e) around the level
    values = [level * (1 + jitter * e * sign) for e in noise for sign in (1, -1)]
    changes = [
        c for i, v in enumerate(values) for c in ev.evaluate([rule_], {"m1": {KEY: v}}, float(i))
    ]
    assert changes == []


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
        events = alert_history(session, HistoryQuery(limit=10)).items
        states = [e.state for e in reversed(events) if e.rule == "Gone"]
    assert states == ["firing", "resolved"]
    factory.kw["bind"].dispose()


def test_a_firing_alert_held_by_hysteresis_says_it_is_clearing() -> None:
    """ "Busy on m1 ... (value 0)" while firing read like a bug on the console's banner (the
    walk-through's MemberRestarted, held 300 s): the summary says it is clearing."""
    ev = Evaluator()
    rules = [rule(for_seconds=0.0, clear_for=300.0)]
    assert states(ev, rules, {"m1": 12}, 100) == [("m1", "firing")]
    (alert,) = ev.active()
    assert alert.summary() == "Busy on m1: connected_users > 10 (value 12)"
    assert states(ev, rules, {"m1": 0}, 101) == []
    (alert,) = ev.active()
    assert alert.state == "firing"
    assert alert.summary() == (
        "Busy on m1: connected_users > 10 (value 0, clearing: resolves after 300 s past the"
        " clear line)"
    )
