"""Built-in alert signals, rules, silences and rule checks (pure code and a migrated store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from pushgrid.admin_api.alert_signals import (
    SILENT_DOWN_SECONDS,
    MemberTracker,
    ServerLook,
    health_readings,
    key,
    merge,
)
from pushgrid.admin_api.alerting import Evaluator
from pushgrid.admin_api.schemas_ops import RuleIn
from pushgrid.admin_api.services.alert_signals import briefly_silent
from pushgrid.admin_api.services.alert_silences import Mute, silenced_until
from pushgrid.admin_api.services.alerts import RuleService
from pushgrid.metrics import sqlstore
from pushgrid.metrics.health import Reason, cluster_health, member_health
from pushgrid.ops.alerts import SIGNALS

DOWN, QUORUM, ARCHIVE = key("member_down"), key("quorum_lost"), key("archive_failing")
RESTARTED, SLOW = key("member_restarted"), key("slow_consumer_disconnects")


def test_health_signals_read_the_health_models_reasons() -> None:
    # m1 and m2 answer, m2's peers do not hear m3 and m2 has no quorum; m3 cannot be read
    health = cluster_health(
        {
            "m1": member_health("m1", members_down=["m3"]),
            "m2": member_health("m2", members_down=["m3"], quorum=False),
            "m3": None,
        }
    )
    out = health_readings(["m1", "m2", "m3"], ["m1", "m2"], health.reasons)
    assert out["m1"] == {DOWN: 0.0, QUORUM: 0.0, ARCHIVE: 0.0}
    assert out["m2"] == {DOWN: 0.0, QUORUM: 1.0, ARCHIVE: 0.0}
    assert out["m3"] == {DOWN: 1.0}  # its quorum and archive are unknown, not lost
    # a member only its peers know of (discovered) is down too
    assert health_readings([], [], [Reason("member_down", "m4")]) == {"m4": {DOWN: 1.0}}


def test_a_member_silent_for_a_moment_is_not_down_yet() -> None:
    # m2 and m3 could not be read: m2 has not answered in time for 3 s (a loaded, live member),
    # m3 for 12 s (hung); m4 refused (no silence: its process is gone)
    healths = {"m1": member_health("m1"), "m2": None, "m3": None, "m4": None}
    silent = {"m2": 3.0, "m3": SILENT_DOWN_SECONDS + 2}
    unsure = briefly_silent(healths, silent)
    assert unsure == {"m2"}
    health = cluster_health({n: h for n, h in healths.items() if n not in unsure})
    out = health_readings(healths, ["m1"], health.reasons, unsure)
    assert out["m2"] == {}  # missing: a firing MemberDown neither fires anew nor resolves
    assert out["m3"] == {DOWN: 1.0}
    assert out["m4"] == {DOWN: 1.0}
    # a silent member its peers no longer hear is down whatever the grace
    heard = cluster_health({"m1": member_health("m1", members_down=["m2"])})
    assert health_readings(["m1", "m2"], ["m1"], heard.reasons, {"m2"})["m2"] == {DOWN: 1.0}


def test_restarts_and_slow_consumer_rates_between_looks() -> None:
    tracker = MemberTracker()
    first = tracker.readings({"m1": ServerLook(10.0, 1000.0, 5.0), "m2": None})
    assert first == {"m1": {RESTARTED: 0.0, SLOW: None}}  # the first look knows no past
    again = tracker.readings({"m1": ServerLook(12.0, 1000.0, 9.0)})
    assert again == {"m1": {RESTARTED: 0.0, SLOW: 2.0}}  # 4 over 2 s of real time
    restarted = tracker.readings({"m1": ServerLook(13.0, 5000.0, 0.0)})
    assert restarted == {"m1": {RESTARTED: 1.0, SLOW: None}}  # counter reset: no rate
    assert tracker.readings({"m1": ServerLook(14.0, 5000.0, 0.0)}) == {
        "m1": {RESTARTED: 0.0, SLOW: 0.0}
    }
    assert merge({"a": {DOWN: 1.0}}, {"a": {SLOW: 2.0}, "b": {}}) == {
        "a": {DOWN: 1.0, SLOW: 2.0},
        "b": {},
    }


def test_silences_cover_a_rule_on_one_target_or_all_until_their_end() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = now + timedelta(hours=1)
    mutes = [Mute(1, "m1", later), Mute(2, None, now + timedelta(hours=2)), Mute(3, None, now)]
    assert silenced_until(mutes, 1, "m1", now) == later
    assert silenced_until(mutes, 1, "m2", now) is None
    assert silenced_until(mutes, 2, "anything", now) == now + timedelta(hours=2)
    assert silenced_until(mutes, 3, "m1", now) is None  # ended
    assert silenced_until(mutes, 1, "m1", later) is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"clear_threshold": 12}, "quiet side"),
        ({"indicator": "member_down", "window": "1m"}, "window 'current' only"),
        ({"indicator": "stats_pipeline_failing"}, "scope 'cluster' only"),
        ({"indicator": "no_such_signal"}, "indicator"),
        ({"clear_for": -1}, "clear_for"),
    ],
)
def test_incoherent_rules_are_refused(changes: dict[str, object], message: str) -> None:
    body = {"name": "R", "indicator": "connected_users", "threshold": 10, **changes}
    with pytest.raises(ValidationError, match=message):
        RuleIn.model_validate(body)


def test_the_built_in_rules_are_on_after_migration_and_fire_on_their_signals(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    sqlstore.upgrade(url)
    factory = sqlstore.make_session_factory(url)
    with factory() as session:
        rules = RuleService(session).enabled()
        listed = RuleService(session).all()
    factory.kw["bind"].dispose()
    assert {r.indicator for r in rules} == set(SIGNALS)
    assert all(r.builtin for r in listed)
    by_signal = {r.indicator: r for r in rules}
    down = by_signal["member_down"]
    ev = Evaluator()
    up = {"m1": {DOWN: 0.0}, "m3": {DOWN: 0.0}}
    dead = {"m1": {DOWN: 0.0}, "m3": {DOWN: 1.0}}
    fired = [
        (t, c.alert.target, c.state)
        for t, readings in [(0, up), (1, up), (2, up), (3, dead), (4, dead), (5, dead)]
        for c in ev.evaluate([down], readings, float(t))
    ]
    assert fired == [(4, "m3", "firing")]  # down on both looks of the last 2 s (3, 4)
    back = [(t, c.state) for t in range(6, 20) for c in ev.evaluate([down], up, float(t))]
    assert back == [(11, "resolved")]  # clear from 6 (avg 0.5 < 1), for 5 s
    pipeline = by_signal["stats_pipeline_failing"]
    changes = Evaluator().evaluate([pipeline], {}, 1.0, {key("stats_pipeline_failing"): 1.0})
    assert [(c.alert.target, c.state) for c in changes] == [("cluster", "firing")]


def test_client_loss_is_what_a_guaranteed_members_clients_could_not_get_back() -> None:
    from pushgrid.admin_api.alert_signals import ServerLook, key, loss_readings

    guaranteed = ServerLook(0.0, 1.0, 0.0, "guaranteed")
    standard = ServerLook(0.0, 1.0, 0.0, "standard")
    loss = {"gaps": 7, "duplicates": 3, "resyncs": 1, "recovered": 7, "recovery_failed": 2}
    readings = loss_readings(
        {
            "g": (guaranteed, loss),
            "clean": (guaranteed, {"gaps": 4, "recovered": 4}),  # every gap recovered
            "s": (standard, loss),  # Standard clients resync by design after a failover
            "unread": (guaranteed, None),
        }
    )
    assert readings == {
        "g": {key("client_loss"): 3.0},
        "clean": {key("client_loss"): 0.0},
    }
