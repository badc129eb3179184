"""Server restart (new epoch, memory engine forgets) and graceful shutdown (1001, exit 0)."""

from __future__ import annotations

import asyncio
import signal

import pytest

from .pgtest import RawWs


async def test_sigkill_restart_gives_new_epoch_and_snapshot_only_if_republished(
    server_factory, connect
):
    srv = server_factory()
    s = "/restart/NYSE/IBM"
    publisher = await connect(srv)
    sub = await connect(srv)
    await sub.subscribe(s)
    before = await publisher.publish_ok(s, "193", {"volume": "6.62M"})
    (message,) = await sub.messages(1, s)
    old_epoch, old_seq = message["epoch"], message["seq"]
    assert (old_epoch, old_seq) == (before["epoch"], 1)

    old_port = srv.port
    await srv.arestart(signal.SIGKILL)
    assert srv.returncodes[-1] == -signal.SIGKILL
    assert srv.port == old_port
    # the old connections are gone (no close frame: the process was killed)
    assert await sub.wait_closed() in (None, 1006)

    # Nothing re-published yet: new_epoch, a new epoch, seq 0, and no snapshot (forgotten).
    again = await connect(srv)
    subscribed, frames = await again.subscribe_all(s, recover={"epoch": old_epoch, "seq": old_seq})
    assert subscribed["status"] == "allow"
    assert subscribed["recovery"] == "new_epoch"
    new_epoch = subscribed["epoch"]
    assert new_epoch
    assert new_epoch != old_epoch
    assert subscribed["seq"] == 0
    assert frames == [], "the memory engine forgot the snapshot: nothing to send"
    async with srv.http() as http:
        assert (await http.get("/snapshot", params={"subject": s})).status_code == 404

    # Re-published: a new client recovering from the old position gets new_epoch + snapshot.
    publisher = await connect(srv)
    republished = await publisher.publish_ok(s, "194", {"volume": "7M"})
    assert (republished["epoch"], republished["seq"]) == (new_epoch, 1)
    (live,) = await again.messages(1, s)
    assert (live["kind"], live["epoch"], live["seq"]) == ("update", new_epoch, 1)

    third = await connect(srv)
    subscribed, frames = await third.subscribe_all(s, recover={"epoch": old_epoch, "seq": old_seq})
    assert subscribed["recovery"] == "new_epoch"
    assert (subscribed["epoch"], subscribed["seq"]) == (new_epoch, 1)
    assert len(frames) == 1, frames
    assert frames[0]["kind"] == "snapshot"
    assert (frames[0]["content"], frames[0]["fields"]) == ("194", {"volume": "7M"})
    assert (frames[0]["epoch"], frames[0]["seq"]) == (new_epoch, 1)


async def test_sigterm_closes_clients_with_1001_and_exits_0(server_factory, connect):
    shutdown_timeout = 2.0
    srv = server_factory(ShutdownTimeout=shutdown_timeout)
    clients = [await connect(srv) for _ in range(3)]
    for n, client in enumerate(clients):
        await client.subscribe(f"/shutdown/s/{n}")
    # a peer that never answers the close handshake must not keep the server alive
    stuck = await asyncio.to_thread(RawWs, srv.host, srv.port)
    await asyncio.to_thread(stuck.read_frames, 1)  # welcome

    code = await srv.astop(signal.SIGTERM, timeout=shutdown_timeout + 10)
    assert code == 0, srv.log()
    for client in clients:
        assert await client.wait_closed() == 1001
        assert client.close_reason
    ended = await asyncio.to_thread(stuck.read_until_closed, 10)
    assert ended in ("eof", "reset")
    if ended == "eof":
        assert stuck.close_code == 1001
    stuck.close()
    assert "shutting down" in srv.log()


async def test_sigint_also_shuts_down_gracefully(server_factory, connect):
    srv = server_factory(ShutdownTimeout=2)
    client = await connect(srv)
    assert await srv.astop(signal.SIGINT, timeout=12) == 0, srv.log()
    assert await client.wait_closed() == 1001


@pytest.mark.parametrize("restart_signal", [signal.SIGTERM])
async def test_clients_can_resubscribe_after_graceful_restart(
    server_factory, connect, restart_signal
):
    srv = server_factory(ShutdownTimeout=2)
    publisher = await connect(srv)
    old = await publisher.publish_ok("/graceful/a/b", "x")
    await srv.arestart(restart_signal)
    assert srv.returncodes[-1] == 0
    client = await connect(srv)
    subscribed = await client.subscribe("/graceful/a/b", recover={"epoch": old["epoch"], "seq": 1})
    assert subscribed["recovery"] == "new_epoch"
    assert subscribed["epoch"] != old["epoch"]
