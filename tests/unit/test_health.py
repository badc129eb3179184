"""The one health model (issue 21 item 2): metrics/health.py, and the views that show it."""

from __future__ import annotations

import msgspec

from pushgrid.admin_api.member_client import MemberEndpoint
from pushgrid.admin_api.services.cluster import SLOW_LOOKS_DOWN, merge_views, watched_state
from pushgrid.metrics.health import (
    ArchiveState,
    Health,
    Reason,
    cluster_health,
    member_health,
    member_transitions,
)
from pushgrid.ops.attributes import decode
from pushgrid.ops.cluster import ClusterDocument
from pushgrid.server.cluster.status import ClusterStatus, MemberView, assessed
from pushgrid.server.monitoring.cluster_view import cluster_document, meta_fields, status_dict

NOW = 1_795_000_000.0


def _status(down: tuple[str, ...] = (), quorum: bool = True) -> ClusterStatus:
    names = ("m1", "m2", "m3")
    return ClusterStatus(
        engine="nats",
        mode="guaranteed",
        members=tuple(
            MemberView(n, i, "", True, "down" if n in down else "up", n == "m1")
            for i, n in enumerate(names, 1)
        ),
        seeds=3,
        quorum_size=2,
        quorum=quorum,
        nats_connected=True,
    )


def test_a_member_down_degrades_every_survivor_for_that_reason() -> None:
    assert member_health("m1") == Health("ok")
    health = member_health("m1", members_down=["m3"])
    assert health.status == "degraded"
    assert health.reasons == (Reason("member_down", "m3"),)
    assert health.summary == "degraded: member m3 is down"


def test_statuses_and_reasons() -> None:
    assert member_health("m1", quorum=False).status == "degraded"
    assert member_health("m1", nats_connected=False, quorum=False).reasons == (
        Reason("nats_disconnected", "m1"),
    )
    assert member_health("m1", nats_connected=False).status == "down"
    assert member_health("m1", stopping=True).status == "down"
    assert member_health("m1", replica_lags={"pushgrid-m2": 5000, "pushgrid-m3": 3}).reasons == (
        Reason("stream_lag", "pushgrid-m2"),
    )
    assert member_health("m1", config_mismatch=["m2"]).status == "degraded"


def test_an_isolated_member_is_down_and_says_why() -> None:
    health = member_health("m1", isolated=True, quorum=False, members_down=["m2", "m3"])
    assert health.status == "down"  # it refuses sessions and publishes: send no one there
    assert health.reasons[0] == Reason("cluster_isolated", "m1")
    assert "cut off from its cluster" in health.summary
    assert (
        cluster_health({"m1": health, "m2": member_health("m2", members_down=["m1"])}).status
        == "degraded"
    )


def test_archive_failing() -> None:
    fresh = ArchiveState(True, NOW - 1, 0.0)
    assert member_health("m1", archive=fresh, now=NOW).status == "ok"
    failed = ArchiveState(True, NOW - 2, NOW - 1)
    assert member_health("m1", archive=failed, now=NOW).reasons == (
        Reason("archive_failing", "m1"),
    )
    stale = ArchiveState(True, NOW - 60, 0.0)
    assert member_health("m1", archive=stale, now=NOW).status == "degraded"
    assert member_health("m1", archive=ArchiveState(False, 0, 0), now=NOW).status == "ok"
    starting = ArchiveState(True, 0.0, 0.0)  # nothing written yet
    assert member_health("m1", archive=starting, now=NOW).status == "ok"


def test_the_cluster_merges_the_members_and_counts_the_unreadable_down() -> None:
    survivor = member_health("m1", members_down=["m3"])
    health = cluster_health({"m1": survivor, "m2": survivor, "m3": None})
    assert health == Health("degraded", (Reason("member_down", "m3"),))
    assert cluster_health({"m1": Health("ok"), "m2": Health("ok")}) == Health("ok")
    assert cluster_health({"m1": None, "m2": None}).status == "down"
    stopping = member_health("m1", stopping=True)
    assert cluster_health({"m1": stopping, "m2": Health("ok")}).status == "degraded"
    assert cluster_health({"m1": stopping}).status == "down"


def test_every_member_view_shows_the_same_verdict() -> None:
    """/health and the Cluster MBean (status_dict), the meta-subject (meta_fields) and the admin
    API (merge_views over the MBean values) agree when a member is down."""
    status = assessed(_status(down=("m3",)))
    assert status.health == "degraded"
    view = status_dict(status)
    assert view["health"] == "degraded"
    assert view["healthReasons"] == [
        {"code": "member_down", "member": "m3", "text": "member m3 is down"}
    ]
    fields = meta_fields(status)
    assert (fields["health"], fields["reasons"]) == ("degraded", "member m3 is down")
    mbean = decode(ClusterDocument, msgspec.to_builtins(cluster_document(status)), "Cluster")
    members = [
        MemberEndpoint(name=n, monitor_url=f"http://{n}", source="config") for n in ("m1", "m3")
    ]
    merged = merge_views(members, [mbean, None])
    assert merged.health == "degraded"
    assert [r.model_dump() for r in merged.reasons] == view["healthReasons"]


def test_a_healthy_cluster_is_ok_everywhere() -> None:
    status = assessed(_status())
    assert status.health == "ok"
    assert status_dict(status)["healthReasons"] == []
    assert meta_fields(status)["reasons"] == ""


def test_member_transitions() -> None:
    assert member_transitions(None, {"m2": "up", "m3": "down"}) == []
    assert member_transitions({"m2": "up", "m3": "up"}, {"m2": "up", "m3": "down"}) == [
        ("m3", "down")
    ]
    assert member_transitions({"m3": "down"}, {"m3": "up"}) == [("m3", "up")]
    assert member_transitions({"m3": "up"}, {}) == [], "a forgotten member is not news"
    assert member_transitions({}, {"m4": "down", "m5": "up"}) == [("m4", "down")]


def test_a_member_that_misses_one_look_is_not_down_one_that_refuses_is() -> None:
    """The admin API's member watch: a slow answer once (a loaded machine) changes nothing, two
    looks in a row without an answer are down, a refused connection is down at once."""
    assert watched_state("slow", "up", 1) == "up"
    assert watched_state("slow", None, 1) == "up"
    assert watched_state("slow", "up", SLOW_LOOKS_DOWN) == "down"
    assert watched_state("slow", "down", 1) == "down"
    assert watched_state("refused", "up", 0) == "down"
    assert watched_state("up", "down", 0) == "up"
