"""Cluster topology: members, seeds, self, ports and the NATS node configuration (pure code)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from pushgrid.config import default_seed_count, load_settings
from pushgrid.kernel.addresses import resolve_self
from pushgrid.protocol.errors import ErrorCode
from pushgrid.server.cluster.credentials import BusCredentials
from pushgrid.server.cluster.local import member_overrides
from pushgrid.server.cluster.topology import BusOptions, Topology, nats_config
from pushgrid.server.engine.base import PublishRequest, SnapshotBounds
from pushgrid.server.engine.nats_wire import (
    Record,
    decode_record,
    encode_record,
    item_bytes,
    next_record,
    subject_token,
    token_subject,
)

MEMBERS = [f"127.0.0.1:{7000 + 10 * i}" for i in range(1, 7)]


def test_seed_count_follows_the_spec() -> None:
    assert [default_seed_count(n) for n in (3, 4, 5, 12)] == [3, 3, 5, 5]


def test_first_members_are_the_seeds() -> None:
    topology = Topology.build(MEMBERS, "6", None)
    assert [m.index for m in topology.seeds] == [1, 2, 3, 4, 5]
    assert topology.quorum == 3
    assert Topology.build(MEMBERS, "6", 3).quorum == 2
    assert topology.me.address == "127.0.0.1:7060"
    assert not topology.me.seed


def test_self_by_position_or_address() -> None:
    assert resolve_self(MEMBERS, "2") == 2
    assert resolve_self(MEMBERS, "127.0.0.1:7030") == 3
    with pytest.raises(ValueError, match="not one of ClusterMembers"):
        resolve_self(MEMBERS, "127.0.0.1:9999")
    with pytest.raises(ValueError, match="outside ClusterMembers"):
        resolve_self(MEMBERS, "0")


def test_fingerprint_changes_with_the_list_or_the_seeds() -> None:
    base = Topology.build(MEMBERS, "1", None).fingerprint()
    assert Topology.build(MEMBERS, "4", None).fingerprint() == base  # same cluster, other member
    assert Topology.build(MEMBERS[:5], "1", None).fingerprint() != base
    assert Topology.build(MEMBERS, "1", 3).fingerprint() != base
    assert Topology.build(list(reversed(MEMBERS)), "1", None).fingerprint() != base


SECRETS = BusCredentials.derive("secret")
BUS = BusOptions(SECRETS)


def test_seed_node_runs_jetstream_and_routes_to_everyone(tmp_path: Path) -> None:
    topology = Topology.build(MEMBERS[:3], "1", None)
    config = json.loads(nats_config(topology, tmp_path, BUS, jetstream=True))
    assert config["server_name"] == "pushgrid-m1"
    assert config["port"] == 7011
    assert config["host"] == "127.0.0.1"
    assert config["http"] == "127.0.0.1:7012"
    assert config["cluster"]["listen"] == "127.0.0.1:7010"
    route = f"nats-route://pushgrid-route:{SECRETS.route_password}@127.0.0.1"
    assert config["cluster"]["routes"] == [f"{route}:7020", f"{route}:7030"]
    assert config["cluster"]["authorization"]["password"] == SECRETS.route_password
    assert config["jetstream"]["store_dir"] == str(tmp_path)
    assert config["jetstream"]["sync_interval"] == "always"  # fsync before each ack (ADR 023)


def test_the_fsync_policy_reaches_the_seed_node(tmp_path: Path) -> None:
    topology = Topology.build(MEMBERS[:3], "2", None)
    config = json.loads(nats_config(topology, tmp_path, BUS, True, sync_interval="2m"))
    assert config["jetstream"]["sync_interval"] == "2m"


def test_the_bus_is_never_anonymous_and_advertises_no_other_node(tmp_path: Path) -> None:
    """Issue 22: client port and routes need the passwords derived from ClusterPassword, the
    client port binds loopback whatever the member's cluster address, and the node does not
    hand its clients the other nodes' client ports."""
    topology = Topology.build(["10.0.0.1:7100", "10.0.0.2:7100"], "2", None)
    config = json.loads(nats_config(topology, tmp_path, BUS, jetstream=False))
    assert config["host"] == "127.0.0.1"
    assert config["cluster"]["listen"] == "10.0.0.2:7100"
    assert config["authorization"]["users"] == [
        {"user": "pushgrid-member", "password": SECRETS.client_password}
    ]
    assert config["cluster"]["no_advertise"] is True
    assert "secret" not in json.dumps(config)  # derived values only, never the secret itself
    assert len({SECRETS.client_password, SECRETS.route_password}) == 2
    public = json.loads(nats_config(topology, tmp_path, BusOptions(SECRETS, "0.0.0.0"), False))
    assert public["host"] == "0.0.0.0"


def test_route_tls_when_configured(tmp_path: Path) -> None:
    bus = BusOptions(
        SECRETS, tls_certificate=Path("c.pem"), tls_key=Path("k.pem"), tls_ca=Path("ca")
    )
    config = json.loads(nats_config(Topology.build(MEMBERS[:2], "1", None), tmp_path, bus, False))
    assert config["cluster"]["tls"] == {
        "cert_file": "c.pem",
        "key_file": "k.pem",
        "ca_file": "ca",
        "timeout": 2,
        "verify": True,
    }
    assert config["tls"]["cert_file"] == "c.pem"


def test_membership_signatures() -> None:
    other = BusCredentials.derive("another")
    signature = SECRETS.sign("pg.members", b"{}")
    assert SECRETS.verify("pg.members", b"{}", signature)
    assert not SECRETS.verify("pg.hello", b"{}", signature)  # bound to the kind
    assert not SECRETS.verify("pg.members", b"{} ", signature)
    assert not other.verify("pg.members", b"{}", signature)
    assert not SECRETS.verify("pg.members", b"{}", None)
    assert "secret" not in repr(SECRETS)


def test_non_seed_and_standard_nodes_run_no_jetstream(tmp_path: Path) -> None:
    fourth = json.loads(nats_config(Topology.build(MEMBERS[:4], "4", None), tmp_path, BUS, True))
    assert "jetstream" not in fourth
    standard = json.loads(nats_config(Topology.build(MEMBERS[:2], "1", None), tmp_path, BUS, False))
    assert "jetstream" not in standard


@pytest.mark.parametrize("subject", ["/Stocks/NYSE/IBM", "/a b/*/>", "/日本/é.x", "/" + "x" * 1023])
def test_subject_tokens_round_trip_and_are_single_nats_tokens(subject: str) -> None:
    token = subject_token(subject)
    assert token_subject(token) == subject
    assert not set(token) & {".", "*", ">", " ", "\t"}


def _request(content: str, fields: dict[str, str], retained: bool, qos: str) -> PublishRequest:
    return PublishRequest("/s/x", content, fields, retained, qos)  # type: ignore[arg-type]


def _next(previous: Record | None, requests: list[PublishRequest], epoch: str, ts: int) -> Record:
    record = next_record(previous, requests, epoch, ts).record
    assert record is not None
    return record


def test_records_chain_numbering_and_snapshot() -> None:
    first = _next(None, [_request("193", {"volume": "6M"}, True, "guaranteed")], "e1", 10)
    assert (first.e, first.s, first.sc, first.sf) == ("e1", 1, "193", {"volume": "6M"})
    standard = _next(first, [_request("x", {"bid": "1"}, False, "standard")], "other", 20)
    assert (standard.s, standard.sc, standard.sf) == (1, "193", {"volume": "6M"})
    second = _next(standard, [_request("194", {"bid": "2"}, True, "guaranteed")], "o", 30)
    assert (second.e, second.s) == ("e1", 2)
    assert second.sf == {"volume": "6M", "bid": "2"}
    assert second.st == 30
    snapshot = second.snapshot("/s/x")
    assert snapshot is not None
    assert (snapshot.content, snapshot.seq) == ("194", 2)
    assert first.sf == {"volume": "6M"}  # earlier records are not changed
    assert isinstance(second, Record)


def test_one_record_numbers_a_batch_in_order() -> None:
    batch = [
        _request("a", {"k": "1"}, True, "guaranteed"),
        _request("b", {}, False, "standard"),
        _request("c", {"j": "2"}, True, "guaranteed"),
    ]
    record = decode_record(encode_record(_next(None, batch, "e", 5)))
    assert [(m.content, m.seq, m.qos) for m in record.messages("/s/x")] == [
        ("a", 1, "guaranteed"),
        ("b", 1, "standard"),
        ("c", 2, "guaranteed"),
    ]
    assert (record.s, record.sc, record.sf) == (2, "c", {"k": "1", "j": "2"})
    assert [item_bytes(item) for item in record.i] == [3, 1, 3]


def test_a_record_leaves_out_what_would_break_a_snapshot_bound() -> None:
    """Guarantee 8 inside one record: each request is checked against the snapshot the
    requests before it made, the refused ones take no seq and change no snapshot."""
    previous = _next(None, [_request("a", {"k": "1"}, True, "guaranteed")], "e", 5)
    batch = [
        _request("b", {"j": "2"}, True, "guaranteed"),  # 2 fields: fits
        _request("c", {"i": "3"}, True, "guaranteed"),  # a third: refused
        _request("d", {"i": "3"}, False, "guaranteed"),  # not retained: no snapshot, no bound
        _request("e", {"k": "9"}, True, "guaranteed"),  # replaces a value: fits
    ]
    merged = next_record(previous, batch, "e", 6, SnapshotBounds(max_fields=2), "/s/x")
    assert merged.record is not None
    assert [m.content for m in merged.record.messages("/s/x")] == ["b", "d", "e"]
    assert [m.seq for m in merged.record.messages("/s/x")] == [2, 3, 4]
    assert merged.record.sf == {"k": "9", "j": "2"}
    assert [None if r is None else r.code for r in merged.refused] == [
        None,
        ErrorCode.TOO_MANY_FIELDS,
        None,
        None,
    ]
    alone = next_record(merged.record, [batch[1]], "e", 7, SnapshotBounds(max_fields=2), "/s/x")
    assert alone.record is None
    big = SnapshotBounds(max_fields=10, max_bytes=4)
    (refusal,) = next_record(merged.record, [batch[1]], "e", 7, big, "/s/x").refused
    assert refusal is not None
    assert refusal.code is ErrorCode.SNAPSHOT_TOO_LARGE


def test_a_local_cluster_shares_one_random_private_password(tmp_path: Path) -> None:
    """``pushgrid up --members N`` without ClusterPassword: one random secret, 0600, reused."""
    settings = load_settings(None, environ={}, cluster_data_dir=str(tmp_path / "cluster"))
    first = member_overrides(settings, 3, 1, "Guaranteed")["ClusterPassword"]
    assert len(first) >= 32
    assert {member_overrides(settings, 3, i, "Guaranteed")["ClusterPassword"] for i in (2, 3)} == {
        first
    }
    secret = tmp_path / "cluster" / "local-cluster.secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    given = load_settings(None, environ={}, cluster_password="mine")
    assert member_overrides(given, 3, 1, "Guaranteed")["ClusterPassword"] == "mine"


def test_a_local_cluster_starts_its_cluster_ports_where_clustermembers_says() -> None:
    """``pushgrid up --members 3`` used 7100, 7110, 7120 whatever the configuration: two local
    clusters on one machine collided. A given ``ClusterMembers`` moves the start."""
    default = load_settings(None, environ={}, cluster_password="pw")
    assert member_overrides(default, 3, 2, "Guaranteed")["ClusterMembers"] == (
        "127.0.0.1:7100, 127.0.0.1:7110, 127.0.0.1:7120"
    )
    moved = load_settings(
        None,
        environ={},
        cluster_password="pw",
        cluster_members=["127.0.0.1:25300", "127.0.0.1:25310", "127.0.0.1:25320"],
        cluster_member="1",
    )
    overrides = member_overrides(moved, 3, 3, "Guaranteed")
    assert overrides["ClusterMembers"] == "127.0.0.1:25300, 127.0.0.1:25310, 127.0.0.1:25320"
    assert overrides["ClusterMember"] == "3"


def test_a_local_cluster_s_members_run_one_process_each() -> None:
    """``pushgrid up --members N``: the N members share this host, so each runs one process
    whatever ``Workers = auto`` would give (ADR 067)."""
    default = load_settings(None, environ={}, cluster_password="pw")
    assert default.server.workers == "auto"
    assert {member_overrides(default, 3, i, "Standard")["Workers"] for i in (1, 2, 3)} == {"1"}
