"""The pure parts of Workers (ADR 044): the owner hash, what ``auto`` means from the affinity
and the cgroup quota's text, the descriptor check, and the mesh's framing."""

from __future__ import annotations

import subprocess
import sys
import zlib

import msgspec
import pytest

from pushgrid.config import ConfigError, load_settings
from pushgrid.metrics.counters import Counters
from pushgrid.protocol.frames import DeliveryReport
from pushgrid.server.core.delivery import DeliveryBook, SessionDelivery
from pushgrid.server.engine.base import (
    EngineStats,
    Published,
    PublishRequest,
    Recovery,
    Snapshot,
)
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.workers.cores import (
    cgroup_v2_path,
    check_descriptors,
    parse_cpu_max,
    quota_cores,
    resolve_workers,
    usable_cores,
)
from pushgrid.server.workers.delivery_share import DeliveryShipment, DeliveryShipper
from pushgrid.server.workers.delivery_share import absorb as absorb_delivery
from pushgrid.server.workers.ownership import owner_of, share, worker_limits
from pushgrid.server.workers.supervisor import bind_listeners, bind_reuse_port
from pushgrid.server.workers.totals import WorkerTotals
from pushgrid.server.workers.wire import (
    MAX_MESH_FRAME,
    FrameReader,
    MeshAnswer,
    MeshAsk,
    MeshForward,
    MeshFrameError,
    MeshHello,
    MeshInterest,
    MeshMessage,
    WorkerReport,
    encode,
)


def test_owner_is_crc32_modulo_workers() -> None:
    subject = "/Stocks/NYSE/IBM"
    assert owner_of(subject, 2) == zlib.crc32(subject.encode()) % 2
    assert owner_of(subject, 1) == 0
    owners = {owner_of(f"/s/{i}", 4) for i in range(200)}
    assert owners == {0, 1, 2, 3}  # every worker owns some


def test_the_servers_own_subjects_are_worker_0s() -> None:
    """Worker 0 publishes them (meta-subjects, the admin API's alerts): no mesh question, and
    an alert about a stopped worker is not held up by it (crc32 would give it to worker 1)."""
    assert zlib.crc32(b"/pushgrid/alerts") % 2 == 1
    for subject in ("/pushgrid/alerts", "/pushgrid/m1/cluster", "/pushgrid/presence"):
        assert [owner_of(subject, n) for n in (1, 2, 3, 4)] == [0, 0, 0, 0]
    assert owner_of("/pushgridx/a", 2) == zlib.crc32(b"/pushgridx/a") % 2  # only the prefix


def test_owner_is_the_same_in_another_process() -> None:
    """Python's hash() is salted per process; the owner must not be."""
    subjects = [f"/s/{i}" for i in range(50)]
    code = (
        "from pushgrid.server.workers.ownership import owner_of;"
        f"print([owner_of(s, 3) for s in {subjects!r}])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345"},
    ).stdout
    assert out.strip() == str([owner_of(s, 3) for s in subjects])


@pytest.mark.parametrize(
    ("text", "cores"),
    [("max 100000", None), ("150000 100000", 1.5), ("200000 100000\n", 2.0), ("garbage", None)],
)
def test_cpu_max_text(text: str, cores: float | None) -> None:
    assert parse_cpu_max(text) == cores


def test_v1_quota() -> None:
    assert quota_cores(-1, 100000) is None  # cfs_quota_us -1: no limit
    assert quota_cores(50000, 100000) == 0.5


def test_cgroup_v2_path() -> None:
    assert cgroup_v2_path("0::/system.slice/pushgrid.service\n") == "/system.slice/pushgrid.service"
    assert cgroup_v2_path("4:memory:/x\n1:cpu:/\n0::/\n") == "/"
    assert cgroup_v2_path("4:memory:/x\n") is None


@pytest.mark.parametrize(
    ("affinity", "quota", "cores"),
    [(8, None, 8), (8, 2.0, 2), (8, 1.5, 2), (8, 0.5, 1), (2, 16.0, 2), (0, None, 1)],
)
def test_usable_cores(affinity: int, quota: float | None, cores: int) -> None:
    assert usable_cores(affinity, quota) == cores


def test_resolve_workers() -> None:
    """``auto`` is the usable cores, a cluster member's too (ADR 067)."""
    assert resolve_workers("auto", 6) == 6
    assert resolve_workers(3, 6) == 3
    assert resolve_workers(1, 6) == 1


def test_a_cluster_engine_puts_every_subject_on_worker_0() -> None:
    """ADR 067: worker 0's engine is the member's one cluster engine."""
    subjects = [f"/s/{n}" for n in range(50)]
    assert {owner_of(s, 4) for s in subjects} == {0, 1, 2, 3}
    assert {owner_of(s, 4, clustered=True) for s in subjects} == {0}


def test_descriptor_check_names_the_key() -> None:
    check_descriptors(4, 2, 20000)
    with pytest.raises(ConfigError, match=r"Workers = 30000 .*open-file limit 20000"):
        check_descriptors(30000, 1, 20000)


def test_settings_read_workers(tmp_path: pytest.TempPathFactory) -> None:
    # every feature works across workers, cluster engines included (ADR 067): auto by default
    assert load_settings(None).server.workers == "auto"
    conf = tmp_path / "pushgrid.conf"  # type: ignore[operator]
    for value, expected in (("auto", "auto"), ("AUTO", "auto"), ("3", 3), ("1", 1)):
        conf.write_text(f"Workers = {value}\n")
        assert load_settings(conf).server.workers == expected
    for value in ("0", "-2", "many"):
        conf.write_text(f"Workers = {value}\n")
        with pytest.raises(ConfigError, match="Workers"):
            load_settings(conf)


def _message(seq: int) -> Published:
    return Published("/a/b", "x" * 600, {"f": "é"}, True, "guaranteed", "e1", seq, 1700)


def test_mesh_frames_round_trip_across_any_cut() -> None:
    messages: list[MeshMessage] = [
        MeshHello(3),
        MeshInterest("/a/b", True),
        MeshForward(_message(7)),
        MeshAsk(1, "publish", "/a/b", request=PublishRequest("/a/b", "c", {}, msg_id="m1")),
        MeshAsk(2, "recover", "/a/b", epoch="e1", seq=4),
        MeshAnswer(1, published=_message(8)),
        MeshAnswer(2, recovery=Recovery("recovered", "e1", 8, (_message(5), _message(6)))),
        MeshAnswer(3, snapshot=Snapshot("/a/b", "c", {"f": "v"}, "e1", 8, 1700)),
        MeshAnswer(4, position=("e1", 8)),
        MeshAnswer(5, error="EngineFull", code="too_many_subjects", reason="full"),
        WorkerReport(1, 42, {"messages_out_total": 9}, 3, 1.5, 1 << 20, 17, [1, 2, 3, 0], 1.0),
    ]
    stream = b"".join(encode(m) for m in messages)
    for cut in (1, 3, 7, len(stream)):
        reader = FrameReader()
        got = []
        for start in range(0, len(stream), cut):
            got += reader.feed(stream[start : start + cut])
        assert got == messages


def test_mesh_frame_errors() -> None:
    with pytest.raises(MeshFrameError):
        FrameReader().feed((MAX_MESH_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(MeshFrameError):
        FrameReader().feed(b"\x00\x00\x00\x02\xc1\xc1")


def _report(
    pid: int, sent: int, sessions: int, delivery: DeliveryShipment | None = None
) -> WorkerReport:
    counters = {name: 0 for name in Counters.__slots__}
    counters |= {"messages_out_total": sent, "sessions": sessions}
    return WorkerReport(
        1, pid, counters, sessions, 0.5, 1 << 20, 9, [3, 4, 5, 0], 1.0, delivery=delivery
    )


def test_worker_zero_counts_the_server_once() -> None:
    totals = WorkerTotals()
    totals.messages_out_total, totals.sessions = 10, 2
    totals.absorb(_report(pid=100, sent=7, sessions=1))
    assert (totals.as_dict()["messages_out_total"], totals.as_dict()["sessions"]) == (17, 3)
    totals.absorb(_report(pid=100, sent=9, sessions=1))  # a newer report replaces the last
    assert totals.as_dict()["messages_out_total"] == 19
    assert totals.engine_stats(EngineStats(1, 1, 1)) == EngineStats(4, 5, 6, 0)
    totals.gone(1)  # link down: its gauges leave, its totals stay
    assert (totals.as_dict()["messages_out_total"], totals.as_dict()["sessions"]) == (19, 2)
    assert totals.engine_stats(EngineStats(1, 1, 1)) == EngineStats(1, 1, 1)
    totals.absorb(_report(pid=100, sent=9, sessions=1))  # the same process back: not twice
    assert totals.as_dict()["messages_out_total"] == 19
    totals.absorb(_report(pid=200, sent=2, sessions=1))  # restarted at 0: never goes down
    assert (totals.as_dict()["messages_out_total"], totals.as_dict()["sessions"]) == (21, 3)


def test_the_memory_bounds_are_shared_out_over_the_workers() -> None:
    """MaxSubjects / MaxRetainedBytes are the server's: the workers' parts add up to them."""
    assert [share(10, 3, i) for i in range(3)] == [4, 3, 3]
    assert [share(0, 3, i) for i in range(3)] == [0, 0, 0], "unbounded stays unbounded"
    assert [share(1, 2, i) for i in range(2)] == [1, 1], "0 would mean unbounded"
    assert sum(share(1_000_001, 4, i) for i in range(4)) == 1_000_001
    limits = EngineLimits(max_cached=7, max_subjects=5, max_retained_bytes=1000)
    one = worker_limits(limits, 2, 1)
    assert (one.max_subjects, one.max_retained_bytes, one.max_cached) == (2, 500, 7)
    assert "worker 1's share of this server's MaxSubjects = 5" in one.share_note
    assert worker_limits(limits, 1, 0) is limits
    assert worker_limits(EngineLimits(), 2, 1) == EngineLimits(), "no bound: nothing to share"


def test_a_worker_s_delivery_seconds_reach_worker_zero_s_book_once() -> None:
    """Worker 1 ships each completed second once; worker 0 merges it into its own same second,
    and archives a second only once the others' share had time to arrive."""
    now = [1000.0]
    worker, zero = DeliveryBook(clock=lambda: now[0]), DeliveryBook(clock=lambda: now[0])
    for book, n in ((worker, 2), (zero, 1)):
        report = msgspec.json.decode(
            b'{"op":"report","interval":5,"entries":[{"latency":[[30,%d]]}]}' % n,
            type=DeliveryReport,
        )
        book.add_report(report, SessionDelivery())
    shipper = DeliveryShipper(worker)
    first = shipper.shipment()
    assert (first.seconds, first.reports) == ([], 1), "the second has not ended"
    now[0] = 1001.5
    (back,) = FrameReader().feed(encode(_report(100, 0, 0, shipper.shipment())))
    assert isinstance(back, WorkerReport)
    assert back.delivery is not None
    absorb_delivery(zero, back.delivery)
    absorb_delivery(zero, first)
    assert (zero.recent().member.latency.count, zero.reports, zero.totals.latency.count) == (
        3,
        2,
        3,
    )
    assert shipper.shipment().seconds == [], "each second once"
    assert zero.completed(settle=3) == [], "not settled yet"
    now[0] = 1004.5
    assert [s.second for s in zero.completed(settle=3)] == [1000]


def test_a_port_another_server_listens_on_is_refused_not_shared() -> None:
    """A second ``pushgrid server`` on the first one's port must not quietly share it: both
    would bind with SO_REUSEPORT (same user), the kernel would split the clients between two
    servers. The supervisor's binding refuses the port, naming it."""
    first = bind_reuse_port("127.0.0.1", 0, 16)  # what a running server's workers hold
    port = first.getsockname()[1]
    try:
        with pytest.raises(OSError, match=rf"cannot listen on 127\.0\.0\.1:{port}: .*in use"):
            bind_listeners([("127.0.0.1", port, False)], 2, 16)
    finally:
        first.close()
    per_worker = bind_listeners([("127.0.0.1", port, False)], 2, 16)  # free again: 2 sockets
    assert [socks[0][0].getsockname()[1] for socks in per_worker] == [port, port]
    for socks in per_worker:
        socks[0][0].close()
