"""The pure parts of the features made server-wide across workers (ADR 060): worker member
names, the occupancy table's folding, the shared per-address publish buckets, the mesh frames
they travel in."""

from __future__ import annotations

from pushgrid.server.core.occupancy import OccupancyTable
from pushgrid.server.workers.address_rate import SharedAddressBuckets
from pushgrid.server.workers.member_bus import worker_member
from pushgrid.server.workers.wire import (
    FrameReader,
    MeshMessage,
    MeshSignal,
    MeshSpent,
    MeshTally,
    encode,
)


def test_worker_member_names_sort_worker_zero_first() -> None:
    names = [worker_member("edge", i) for i in range(3)]
    assert names == ["edge", "edge/worker-1", "edge/worker-2"]
    assert min(reversed(names)) == "edge", "worker 0 is the occupancy emitter while it is up"


def test_the_table_folds_workers_under_the_server_s_name() -> None:
    workers = {worker_member("edge", i) for i in range(2)}
    table = OccupancyTable(lambda m: "edge" if m in workers else m)
    table.apply("edge", {"/a": 1})
    table.apply("edge/worker-1", {"/a": 2, "/b": 1})
    table.apply("other", {"/a": 4})
    assert table.by_member("/a") == {"edge": 3, "other": 4}
    assert sorted(table.counts()) == [("/a", 7), ("/b", 1)]


def test_shared_buckets_pay_for_the_other_workers_tokens() -> None:
    now = [0.0]
    here = SharedAddressBuckets(rate=1.0, burst=5, clock=lambda: now[0])
    assert [here.take("10.0.0.1") for _ in range(2)] == [True, True]
    assert here.take_spent() == {"10.0.0.1": 2}
    assert here.take_spent() == {}
    here.debit({"10.0.0.1": 6, "10.0.0.2": 5})  # in debt by 3
    assert not here.take("10.0.0.1")
    assert not here.take("10.0.0.2")
    now[0] = 4.0  # the refill pays the debt (3), then one token
    assert here.take("10.0.0.1")
    assert not here.take("10.0.0.1")
    assert here.take_spent() == {"10.0.0.1": 1}, "refusals take nothing"
    assert SharedAddressBuckets(rate=0, burst=1).take("x"), "0 = unlimited"


def test_the_new_mesh_frames_round_trip() -> None:
    messages: list[MeshMessage] = [
        MeshSignal("pg.occupancy", b"\x00{}"),
        MeshTally({"/a": [1, 2, 30, 4]}),
        MeshSpent({"127.0.0.1": 7}),
    ]
    assert FrameReader().feed(b"".join(encode(m) for m in messages)) == messages
