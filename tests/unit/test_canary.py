"""Canaries (issue 33 item 3, ADR 049): the matrix's staleness rules, the health decision, and
the member's canary service with the real hub and memory engine (no socket)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pushgrid.metrics.canary import STALE_AFTER, CanaryRow, CanaryState, pair_name
from pushgrid.metrics.counters import Counters
from pushgrid.metrics.health import Health, cluster_health, member_health
from pushgrid.server.canary import CANARY_SUBJECT, CanaryService, canary_request
from pushgrid.server.cluster.status import ClusterStatus, MemberView, assessed, standalone_status
from pushgrid.server.core.hub import Hub
from pushgrid.server.engine.base import META_PREFIX
from pushgrid.server.engine.memory import MemoryEngine
from pushgrid.server.fault_points import DeliveryWedge
from pushgrid.server.framing.outframe import OutFrame
from pushgrid.server.monitoring.canary_view import (
    canary_document,
    canary_metrics,
    stats_lines,
    stats_section,
)

T0 = 1_795_000_000.0


def test_a_pair_is_stale_only_after_the_stale_time_without_a_canary() -> None:
    row = CanaryRow("m2")
    row.expect("m1", T0)
    assert not row.pairs(T0 + STALE_AFTER)[0].stale  # just started expecting: not yet
    assert row.pairs(T0 + STALE_AFTER + 0.1)[0].stale  # never heard for longer: stale
    row.record("m1", sent=T0 + 4.0, arrived=T0 + 4.25)
    pair = row.pairs(T0 + 5.0)[0]
    assert (pair.publisher, pair.receiver, pair.age, pair.latency, pair.received, pair.stale) == (
        "m1",
        "m2",
        0.75,
        0.25,
        1,
        False,
    )
    assert row.pairs(T0 + 4.25 + STALE_AFTER + 0.01)[0].stale


def test_a_late_expectation_does_not_reset_a_known_pair() -> None:
    row = CanaryRow("m2")
    row.expect("m1", T0)
    row.expect("m1", T0 + 100)  # seen up again later: still silent since T0
    assert row.pairs(T0 + STALE_AFTER + 1)[0].stale


def test_latency_is_never_negative_and_ages_are_none_before_the_first_canary() -> None:
    row = CanaryRow("m1")
    row.expect("m3", T0)
    assert row.pairs(T0)[0].age is None
    assert row.pairs(T0)[0].latency is None
    row.record("m3", sent=T0 + 1.0, arrived=T0 + 0.9)  # the other host's clock runs ahead
    assert row.pairs(T0 + 1.0)[0].latency == 0.0


def test_stalled_names_only_publishers_that_are_alive() -> None:
    row = CanaryRow("m2")
    for publisher in ("m1", "m2", "m3"):
        row.expect(publisher, T0)
    row.record("m2", T0 + 9.0, T0 + 9.0)
    later = T0 + 10.0
    heard_now = {"m1": 0.4, "m2": 0.0, "m3": 0.9}
    assert row.stalled(later, heard_now) == ["m1", "m3"]
    assert row.stalled(later, {"m2": 0.0, "m3": 0.9}) == ["m3"]  # m1 is down: member_down
    row.forget(["m2", "m3"])
    assert [p.publisher for p in row.pairs(later)] == ["m2", "m3"]


def test_a_killed_publisher_is_not_a_stall_while_the_membership_still_counts_it_up() -> None:
    """SIGKILL: the canaries and the heartbeats stop together. The pair goes stale (3 s) before
    the membership says down (3.5 s); the publisher's last heartbeat came within an interval of
    its last canary, so the receiver's delivery is not blamed (issue 33: one reason per view)."""
    row = CanaryRow("m1")
    row.expect("m3", T0)
    row.record("m3", T0 + 5.0, T0 + 5.1)  # the last canary; m3 dies at T0 + 5.5
    for seconds_after_death in (2.7, 3.0, 3.4):
        now = T0 + 5.5 + seconds_after_death
        assert row.pairs(now)[0].stale
        since_heard = seconds_after_death + 0.3  # its last heartbeat: 0.3 s before it died
        assert row.stalled(now, {"m1": 0.0, "m3": since_heard}) == []
    # alive and heard, its canaries not arriving: a stall of m1's delivery path
    assert row.stalled(T0 + 8.5, {"m1": 0.0, "m3": 0.6}) == ["m3"]


def test_a_stalled_pair_makes_the_member_degraded_delivery() -> None:
    health = member_health("m2", stalled_pairs=[pair_name("m1", "m2")])
    assert health.status == "degraded"
    assert [r.code for r in health.reasons] == ["delivery_stalled"]
    assert health.reasons[0].member == "m1->m2"
    assert health.summary == "degraded: delivery: canaries of m1 do not reach m2"
    # the cluster merges it like any other reason; a down reason still wins on the member
    merged = cluster_health({"m1": Health("ok"), "m2": health})
    assert merged.status == "degraded"
    assert merged.reasons == health.reasons
    down = member_health("m2", nats_connected=False, stalled_pairs=["m1->m2"])
    assert down.status == "down"


def _cluster(up: tuple[str, ...]) -> ClusterStatus:
    members = tuple(
        MemberView(n, i, "", True, "up" if n in up else "down", n == "m2")
        for i, n in enumerate(("m1", "m2", "m3"), 1)
    )
    return ClusterStatus("nats", "standard", members, 3, 2, True, True)


def test_assessed_carries_the_stalled_pairs_into_every_view() -> None:
    status = assessed(_cluster(("m1", "m2", "m3")), stalled_pairs=("m3->m2",))
    assert status.health == "degraded"
    assert [r.as_dict()["text"] for r in status.verdict.reasons] == [
        "delivery: canaries of m3 do not reach m2"
    ]


def test_canaries_are_reserved_meta_subjects() -> None:
    assert CANARY_SUBJECT.startswith(META_PREFIX)  # no client may publish there
    request = canary_request("m1", 7, T0)
    assert (request.retained, request.qos) == (False, "standard")  # no snapshot, never cached
    assert request.fields == {"member": "m1", "n": "7", "sent": f"{T0:.6f}"}


async def _service(wedge: DeliveryWedge | None = None) -> tuple[CanaryService, Hub, MemoryEngine]:
    engine = MemoryEngine()
    counters = Counters()
    hub = Hub(engine, counters)
    deliver = hub.deliver if wedge is None else wedge.wrap(hub.deliver)
    await engine.start(deliver)
    service = CanaryService("solo", hub, engine, lambda: standalone_status("solo"))
    return service, hub, engine


async def _until(condition: Callable[[], object], within: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_a_single_member_follows_its_own_canary_through_the_hub() -> None:
    service, hub, engine = await _service()
    task = asyncio.create_task(service.run())
    try:
        await _until(lambda: service.row.cells.get("solo") and service.row.cells["solo"].received)
        state = service.state()
        assert [(p.publisher, p.receiver, p.stale) for p in state.pairs] == [
            ("solo", "solo", False)
        ]
        assert state.published >= 1
        assert state.publish_failures == 0
        # not users' traffic: nothing counted in or out, no session, no subscription
        counters = hub.counters.as_dict()
        assert counters["messages_in_total"] == 0
        assert counters["messages_out_total"] == 0
        assert counters["subscriptions"] == 0
        assert not hub.has_subscribers(CANARY_SUBJECT)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await engine.close()


async def test_a_wedged_delivery_stalls_the_pair_while_publishes_are_accepted(
    tmp_path: Path,
) -> None:
    flag = tmp_path / "wedge"
    wedge = DeliveryWedge(flag)
    service, _hub, engine = await _service(wedge)
    wedge.wedged = True  # as the watcher sets it when the file appears
    status = standalone_status("solo")
    task = asyncio.create_task(service.run())
    try:
        await _until(lambda: service.published >= 2)
        assert service.row.cells["solo"].received == 0
        assert wedge.discarded >= 2  # accepted by the engine, never delivered
        now = time.time() + STALE_AFTER + 0.5
        assert service.stalled_pairs(status, now) == ("solo->solo",)
        assert assessed(status, stalled_pairs=service.stalled_pairs(status, now)).health == (
            "degraded"
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await engine.close()


def test_a_member_whose_own_canaries_are_refused_is_not_judged_on_delivery() -> None:
    """No quorum (or not started yet): the engine refuses the member's publishes; that is
    no_quorum's to say, not delivery_stalled's, and nothing is judged before a first publish."""
    engine = MemoryEngine()
    service = CanaryService("solo", Hub(engine, Counters()), engine, lambda: _cluster(()))
    service.row.expect("solo", T0)
    later = T0 + STALE_AFTER + 5
    assert service.row.pairs(later)[0].stale
    assert service.stalled_pairs(standalone_status("solo"), later) == ()
    service.publishing = True
    assert service.stalled_pairs(standalone_status("solo"), later) == ("solo->solo",)


def test_every_view_formats_the_same_state() -> None:
    row = CanaryRow("m2")
    row.expect("m1", T0)
    row.record("m2", T0 + 1.0, T0 + 1.5)
    state = CanaryState("m2", True, 5, 1, tuple(row.pairs(T0 + 10.0)))
    document = canary_document(state)
    assert (document.stale_pairs, document.published, document.publish_failures) == (2, 5, 1)
    assert [(e.publisher, e.stale) for e in document.pairs] == [("m1", True), ("m2", True)]
    section = stats_section(state)
    lines = list(stats_lines(section))
    assert "canary.m1.age_seconds U" in lines
    assert "canary.m2.latency_seconds 0.5" in lines
    assert "canary.m1.stale 1" in lines
    assert "canary_stale_pairs 2" in lines
    metrics = {m.name: m for m in canary_metrics(state)}
    ages = {
        tuple(s.labels.values()): s.value for s in metrics["pushgrid_canary_age_seconds"].samples
    }
    assert ages == {("m2", "m2"): 8.5}  # m1 has no canary yet: no age sample


@pytest.mark.parametrize("message", [b"not json", b'{"fields": {"member": "m1"}}'])
def test_a_frame_that_is_not_a_canary_is_counted_not_recorded(message: bytes) -> None:
    engine = MemoryEngine()
    service = CanaryService("m2", Hub(engine, Counters()), engine, lambda: _cluster(()))
    service._on_frame(OutFrame(message))
    assert service.malformed == 1
    assert not service.row.cells


def test_only_the_current_probe_key_makes_an_internal_probe() -> None:
    engine = MemoryEngine()
    service = CanaryService("m1", Hub(engine, Counters()), engine, lambda: _cluster(()))
    assert service.probe_grant(None) is None
    assert service.probe_grant("eyJhbGciOi.a-user-token") is None  # any other token: a user
    grant = service.probe_grant(service.probe_key)
    assert grant is not None
    assert (grant.subscribe, grant.publish, grant.valid) == ((CANARY_SUBJECT,), (), True)
    stale = service.probe_grant("probe.a-key-of-a-previous-start")
    assert stale is not None
    assert not stale.valid  # counted as a user, and entitled to nothing
