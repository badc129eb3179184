"""``GET /api/v1/alerts/history`` filtered and paged (issue 35 item 4) on a real admin API and
SQLite store: by rule, target, state and time range, with ``total`` and each change's duration
(how long the alert was in its previous state: a resolved event, how long it fired)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from pushgrid.metrics.sqlstore.admin_models import AlertEvent

from .pgtest import AdminHarness, assert_problem

API = "/api/v1"
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def admin(tmp_path) -> Iterator[AdminHarness]:
    harness = AdminHarness(tmp_path / "admin", [])
    # two alerts' lives, interleaved: (minutes after T0, rule id, rule, target, state)
    changes = [
        (0, 1, "Busy", "m1", "pending"),
        (1, 1, "Busy", "m1", "firing"),
        (2, 2, "Down", "cluster", "firing"),
        (11, 1, "Busy", "m1", "resolved"),
        (20, 2, "Down", "cluster", "resolved"),
        (30, 1, "Busy", "m2", "firing"),
    ]
    with harness.session_factory() as db:
        for minute, rule_id, rule, target, state in changes:
            at = T0 + timedelta(minutes=minute)
            db.add(AlertEvent(at=at, rule_id=rule_id, rule=rule, target=target, state=state,
                              value=1.0, summary=f"{rule} on {target} {state}"))  # fmt: skip
        db.commit()
    yield harness
    harness.close()


async def test_history_is_filtered_paged_and_has_durations(admin):
    async with admin.client("viewer") as api:
        whole = (await api.get(f"{API}/alerts/history")).json()
        assert (whole["total"], whole["offset"], whole["limit"]) == (6, 0, 100)
        assert [e["state"] for e in whole["items"]][:2] == ["firing", "resolved"]  # newest first
        by_key = {(e["rule"], e["target"], e["state"]): e for e in whole["items"]}
        assert by_key[("Busy", "m1", "resolved")]["duration"] == 600.0  # fired 10 minutes
        assert by_key[("Busy", "m1", "firing")]["duration"] == 60.0  # pending for 1 minute
        assert by_key[("Down", "cluster", "resolved")]["duration"] == 18 * 60.0
        assert by_key[("Busy", "m2", "firing")]["duration"] is None  # its first change
        assert by_key[("Busy", "m1", "pending")]["previous_at"] is None

        resolved = (await api.get(f"{API}/alerts/history", params={"state": "resolved"})).json()
        assert [(e["rule"], e["duration"]) for e in resolved["items"]] == [
            ("Down", 1080.0),
            ("Busy", 600.0),
        ]  # the duration is the alert's, whatever the filter leaves out
        m1 = await api.get(f"{API}/alerts/history", params={"target": "m1", "rule_id": 1})
        assert [e["state"] for e in m1.json()["items"]] == ["resolved", "firing", "pending"]
        window = await api.get(
            f"{API}/alerts/history",
            params={
                "since": (T0 + timedelta(minutes=2)).isoformat(),
                "until": (T0 + timedelta(minutes=20)).isoformat(),
            },
        )
        assert [e["summary"] for e in window.json()["items"]] == [
            "Busy on m1 resolved",
            "Down on cluster firing",
        ]  # since inclusive, until exclusive
        page = (await api.get(f"{API}/alerts/history", params={"offset": 2, "limit": 2})).json()
        assert (page["total"], len(page["items"])) == (6, 2)
        assert [e["id"] for e in page["items"]] == [e["id"] for e in whole["items"][2:4]]

        naive = await api.get(f"{API}/alerts/history", params={"since": "2026-11-20T12:00:00"})
        assert assert_problem(naive, 422)["errors"][0]["loc"] == ["query", "since"]
        backwards = await api.get(
            f"{API}/alerts/history",
            params={"since": T0.isoformat(), "until": (T0 - timedelta(1)).isoformat()},
        )
        assert "'since' must be before 'until'" in assert_problem(backwards, 422)["detail"]
        bad_state = await api.get(f"{API}/alerts/history", params={"state": "burning"})
        assert assert_problem(bad_state, 422)["errors"][0]["loc"] == ["query", "state"]
        too_many = await api.get(f"{API}/alerts/history", params={"limit": 1001})
        assert assert_problem(too_many, 422)["errors"][0]["loc"] == ["query", "limit"]
