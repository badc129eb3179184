"""The cluster views of a standalone server (a one-member cluster that has its quorum) and of a
cluster member: MBean pushgrid:type=Cluster, /health, Prometheus gauges, the meta-subject."""

from __future__ import annotations

import pytest
from natsserver import delete_streams
from prometheus_client.parser import text_string_to_metric_families

from .cluster import Cluster
from .pgtest import ServerProcess, WsClient, http_publish, monitor_http


async def read_cluster_bean(server: ServerProcess) -> dict[str, object]:
    async with monitor_http(server) as mon:
        answer = (await mon.get("/jolokia/read/pushgrid:type=Cluster")).json()
    assert answer["status"] == 200, answer
    value: dict[str, object] = answer["value"]
    return value


async def cluster_gauges(server: ServerProcess) -> dict[str, float]:
    async with monitor_http(server) as mon:
        text = (await mon.get("/metrics")).text
    gauges: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("pushgrid_cluster"):
            for sample in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                gauges[f"{sample.name}{{{labels}}}"] = sample.value
    return gauges


async def test_a_standalone_server_is_a_one_member_cluster_with_its_quorum(
    server_factory,
) -> None:
    server = server_factory(ServerName="solo", MetaSubjectInterval=0.3)
    bean = await read_cluster_bean(server)
    assert (bean["Engine"], bean["Mode"], bean["Health"], bean["Quorum"]) == (
        "memory",
        "standalone",
        "ok",
        True,
    )
    assert bean["MembersUp"] == 1
    gauges = await cluster_gauges(server)
    assert gauges["pushgrid_cluster_quorum{}"] == 1
    assert gauges["pushgrid_cluster_members_up{}"] == 1
    assert gauges["pushgrid_cluster_info{engine=memory,mode=standalone}"] == 1
    client = await WsClient.connect(server)
    try:
        await client.subscribe("/pushgrid/solo/cluster")
        (snapshot,) = await client.messages(1, "/pushgrid/solo/cluster")
        assert snapshot["content"] == "ok"
        assert snapshot["fields"]["mode"] == "standalone"
        assert snapshot["fields"]["member.solo"] == "up"
    finally:
        await client.close()


async def test_a_member_reports_its_cluster_everywhere(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    pair = Cluster(tmp_path_factory.mktemp("watched"), configured=2, mode="Standard")
    try:
        pair.start(1, 2)
        bean = await read_cluster_bean(pair.member(1))
        assert (bean["Engine"], bean["Mode"], bean["NatsConnected"]) == ("nats", "standard", True)
        members = bean["Members"]
        assert isinstance(members, list)
        assert [(m["name"], m["state"], m["self"]) for m in members] == [
            ("m1", "up", True),
            ("m2", "up", False),
        ]
        assert members[1]["monitorUrls"] == [pair.member(2).monitor_url]
        gauges = await cluster_gauges(pair.member(1))
        assert gauges["pushgrid_cluster_members_up{}"] == 2
        assert gauges["pushgrid_cluster_member_up{member=m2,seed=true}"] == 1
        assert gauges["pushgrid_cluster_info{engine=nats,mode=standard}"] == 1
    finally:
        pair.kill_all()


async def test_a_member_uses_an_existing_nats_cluster(server_factory, nats_url: str) -> None:
    """``NatsServers``: no NATS node of its own; Guaranteed delivery on the operators' NATS."""
    await delete_streams(nats_url)
    server = server_factory(
        ServerName="external",
        NatsServers=nats_url,
        ClusterPassword="signs-the-heartbeats",
        ClusterStreamReplicas=1,
        ClusterDeliveryMode="Guaranteed",
        MetaSubjectInterval=0,
    )
    bean = await read_cluster_bean(server)
    assert (bean["Engine"], bean["Mode"], bean["Quorum"]) == ("nats", "guaranteed", True)
    first = (await http_publish(server, "/external/a", "one")).json()
    second = (await http_publish(server, "/external/a", "two")).json()
    assert (first["seq"], second["seq"]) == (1, 2)
    assert first["epoch"] == second["epoch"]
    assert not list(server.workdir.glob("data/cluster/*/nats.conf"))  # no node of its own
    server.restart()  # the member forgets nothing: the stream holds it
    client = await WsClient.connect(server)
    try:
        status = await client.subscribe("/external/a", recover={"epoch": first["epoch"], "seq": 1})
        assert status["recovery"] == "recovered"
        (frame,) = await client.messages(1, "/external/a")
        assert (frame["seq"], frame["content"]) == (2, "two")
    finally:
        await client.close()
