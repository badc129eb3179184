"""The admin API's and the console's parts of the canaries (ADR 049), pure: the matrix joined
from the members' rows, the DeliveryStalled signal per pair, the Delivery page's tables."""

from __future__ import annotations

from typing import Any

from pushgrid.admin_api.alert_signals import key, stall_readings
from pushgrid.admin_api.canary_probe import client_url
from pushgrid.admin_api.member_client import MemberEndpoint
from pushgrid.admin_api.services.canaries import join
from pushgrid.console.pages.delivery import cell_text, render_matrix, render_probes
from pushgrid.metrics.health import Reason
from pushgrid.ops.canary import CanaryDocument, CanaryPairEntry
from pushgrid.ops.cluster import ClusterDocument, ClusterMember


def _member(name: str) -> MemberEndpoint:
    return MemberEndpoint(name=name, monitor_url=f"http://10.0.0.{name[-1]}:8900", source="config")


def _document(receiver: str, stale: set[str]) -> CanaryDocument:
    pairs = [
        CanaryPairEntry(
            publisher=p,
            receiver=receiver,
            age_seconds=5.0 if p in stale else 0.4,
            latency_seconds=0.002,
            received=10,
            stale=p in stale,
        )
        for p in ("m1", "m2", "m3")
    ]
    return CanaryDocument(
        member=receiver,
        enabled=True,
        interval=1.0,
        stale_after=3.0,
        published=10,
        publish_failures=0,
        stale_pairs=len(stale),
        pairs=pairs,
    )


def test_the_matrix_joins_every_readable_row_and_lists_the_unreadable() -> None:
    reads = [
        (_member("m1"), _document("m1", set()), None),
        (_member("m2"), _document("m2", {"m1", "m3"}), None),
        (_member("m3"), None, "timeout"),
    ]
    matrix = join(reads)
    assert matrix.members == ["m1", "m2", "m3"]
    assert [(p.publisher, p.receiver) for p in matrix.pairs][:3] == [
        ("m1", "m1"),
        ("m2", "m1"),
        ("m3", "m1"),
    ]
    assert len(matrix.pairs) == 6  # m3's row is unknown, not invented
    assert matrix.stalled == ["m1->m2", "m3->m2"]
    unreadable = [r for r in matrix.receivers if not r.reachable]
    assert [(r.member, r.error) for r in unreadable] == [("m3", "timeout")]


def test_delivery_stalled_reads_one_per_pair_of_the_readable_receivers() -> None:
    reasons = [Reason("delivery_stalled", "m1->m2"), Reason("member_down", "m3")]
    readings = stall_readings(["m1", "m2", "m3"], ["m1", "m2"], reasons)
    signal = key("delivery_stalled")
    assert readings["m1->m2"][signal] == 1.0
    assert readings["m2->m2"][signal] == 0.0
    assert readings["m3->m1"][signal] == 0.0
    assert not any(target.endswith("->m3") for target in readings)  # m3 not read: unknown
    assert len(readings) == 6


def _view(url: str) -> ClusterDocument:
    me = ClusterMember(
        name="m1",
        index=1,
        address="",
        seed=True,
        state="up",
        is_self=True,
        client_urls=[url],
        monitor_urls=[],
        last_seen_seconds=None,
    )
    return ClusterDocument(
        engine="memory",
        mode="standalone",
        health="ok",
        health_reasons=[],
        quorum=True,
        quorum_size=0,
        seeds=0,
        members_up=1,
        members=[me],
        nats_connected=True,
        meta_leader=None,
        stream_leader=None,
        replicas=[],
        stream_messages=0,
        config_mismatch=[],
    )


def test_the_probe_connects_where_the_member_says_it_listens() -> None:
    member = _member("m1")
    assert client_url(member, _view("ws://127.0.0.1:8800/ws")) == "ws://127.0.0.1:8800/ws"
    # a wildcard bind is reached at the host the admin API reaches the monitoring port at
    assert client_url(member, _view("ws://0.0.0.0:8800/ws")) == "ws://10.0.0.1:8800/ws"
    assert client_url(member, None) is None


def _texts(component: Any) -> list[str]:
    """Every string inside a Dash component tree, in order."""
    if isinstance(component, str):
        return [component]
    children = getattr(component, "children", None)
    if children is None:
        return []
    if not isinstance(children, list):
        children = [children]
    return [text for child in children for text in _texts(child)]


def _stale_cells(component: Any) -> list[str]:
    found: list[str] = []
    if getattr(component, "className", "") == "canary-cell canary-stale":
        found.append(getattr(component, "data-pair"))
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found += _stale_cells(child)
    return found


def test_the_delivery_page_marks_the_stale_pairs() -> None:
    reads = [
        (_member("m1"), _document("m1", set()), None),
        (_member("m2"), _document("m2", {"m3"}), None),
        (_member("m3"), None, "timeout"),
    ]
    document = join(reads).model_dump(mode="json")
    matrix = render_matrix(document)
    assert _stale_cells(matrix) == ["m3->m2"]
    texts = _texts(matrix)
    assert "0.40 s ago · 2 ms" in texts
    assert texts.count("not readable") == 3
    assert cell_text(None) == "—"
    probes = {
        "probes": [
            {
                "member": "m1",
                "connected": True,
                "age_seconds": None,
                "latency_seconds": None,
                "received": 0,
                "stale": True,
            }
        ]
    }
    assert "no canary yet" in _texts(render_probes(probes))
