"""Pure parts of member handling: URLs, the client port from Listen, live sums, session pages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

import pytest

from pushgrid.admin_api.member_client import (
    MemberEndpoint,
    MemberFailure,
    check_base_url,
    derive_client_url,
)
from pushgrid.admin_api.schemas import (
    IndicatorName,
    LiveIndicator,
    MemberLive,
    SessionOut,
    WindowName,
    WindowValue,
)
from pushgrid.admin_api.services.live import cluster_sums, parse_indicators
from pushgrid.admin_api.services.sessions import SessionQuery, parse_sessions, select_sessions
from pushgrid.metrics.indicators import INDICATOR_NAMES, INDICATORS
from pushgrid.metrics.window_spec import WINDOW_NAMES

# --- URLs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://10.0.0.2:8900", "http://10.0.0.2:8900"),
        (" https://mon.example.com/ ", "https://mon.example.com"),
        ("http://[::1]:8900/base/", "http://[::1]:8900/base"),
    ],
)
def test_base_urls(url: str, expected: str) -> None:
    assert check_base_url(url) == expected


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://host:21", "http"),
        ("http://", "no host"),
        ("http://user:pw@host:8900", "credentials"),
        ("http://host:8900/?x=1", "query"),
        ("http://host:8900/#f", "fragment"),
        ("http://host:99999", "not a URL"),
        ("http://host:0", "port 0"),
        ("http://ho st:1", "spaces"),
    ],
)
def test_bad_base_urls(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        check_base_url(url)


@pytest.mark.parametrize(
    ("listen", "expected"),
    [
        (["127.0.0.1:8800"], "http://127.0.0.1:8800"),
        (["*:8800"], "http://10.0.0.2:8800"),
        (["0.0.0.0:8800", "127.0.0.1:1"], "http://10.0.0.2:8800"),
        ([":8800"], "http://10.0.0.2:8800"),
        (["[::]:8800"], "http://10.0.0.2:8800"),
        (["[::1]:8800"], "http://[::1]:8800"),
        (["push-1.internal:8800"], "http://push-1.internal:8800"),
        ([], None),
        (["nonsense"], None),
    ],
)
def test_client_url_from_listen(listen: list[str], expected: str | None) -> None:
    assert derive_client_url("http://10.0.0.2:8900", listen) == expected


def test_member_credentials_are_not_in_its_repr() -> None:
    member = MemberEndpoint("m", "http://h:1", "registered", username="u", password="pw-secret")
    assert "pw-secret" not in repr(member)
    assert member.has_credentials
    assert not MemberEndpoint("m", "http://h:1", "config", username="u").has_credentials


# --- live statistics --------------------------------------------------------------------------


def _jolokia_indicators(current: dict[str, float | None]) -> dict[str, object]:
    value: dict[str, object] = {}
    for indicator in INDICATORS:
        windows: dict[str, dict[str, float | None]] = {
            window: {"max": 2.0, "avg": 1.5, "stddev": 0.5, "count": 60} for window in WINDOW_NAMES
        }
        windows["15mo"] = {"max": None, "avg": None, "stddev": None, "count": 0}
        value[f"pushgrid:name={indicator.mbean},type=Indicator"] = {
            "Current": current.get(indicator.name, 0.0),
            "SampleTime": 1_795_363_350,
            "Windows": windows,
        }
    return value


def test_schema_names_match_the_metrics_names() -> None:
    """The OpenAPI literals are written out for the schema; they must stay the sampler's names."""
    assert set(get_args(IndicatorName)) == set(INDICATOR_NAMES)
    assert set(get_args(WindowName)) == set(WINDOW_NAMES)


def test_parse_indicators_in_documented_order() -> None:
    sample_time, indicators = parse_indicators(_jolokia_indicators({"connected_users": 7.0}))
    assert sample_time == datetime.fromtimestamp(1_795_363_350, UTC)
    assert [i.name for i in indicators] == list(INDICATOR_NAMES)
    users = indicators[0]
    assert users.current == 7.0
    assert list(users.windows) == list(WINDOW_NAMES)
    assert users.windows["1m"] == WindowValue(max=2.0, avg=1.5, stddev=0.5, count=60)
    assert users.windows["15mo"] == WindowValue(max=None, avg=None, stddev=None, count=0)


def test_parse_indicators_tolerates_odd_values() -> None:
    value = _jolokia_indicators({})
    value["pushgrid:name=Unknown,type=Indicator"] = {"Current": 1}
    value["pushgrid:name=ConnectedUsers,type=Indicator"] = {"Current": float("nan")}
    _, indicators = parse_indicators(value)
    assert indicators[0].current is None  # NaN is not JSON
    assert indicators[0].windows["1m"].count == 0
    assert len(indicators) == 7
    assert parse_indicators(None) == (None, [])


def _member(name: str, reachable: bool, currents: dict[str, float | None]) -> MemberLive:
    return MemberLive(
        member=name,
        reachable=reachable,
        error=None if reachable else "down",
        indicators=[
            LiveIndicator(name=name_, current=value, windows={})  # type: ignore[arg-type]
            for name_, value in currents.items()
        ],
    )


def test_cluster_sums_add_reachable_members_current_values() -> None:
    members = [
        _member("a", True, {"connected_users": 2.0, "outgoing_bytes_per_second": 1e10}),
        _member("b", True, {"connected_users": 3.0, "outgoing_bytes_per_second": 5.0}),
        _member("c", True, {"connected_users": None}),
        _member("down", False, {"connected_users": 100.0}),
    ]
    sums = {s.name: s.current for s in cluster_sums(members)}
    assert list(sums) == list(INDICATOR_NAMES)
    assert sums["connected_users"] == 5.0
    assert sums["outgoing_bytes_per_second"] == 1e10 + 5.0
    assert sums["incoming_messages_per_second"] == 0.0


def test_cluster_sums_without_members() -> None:
    assert all(s.current == 0.0 for s in cluster_sums([]))


# --- sessions ---------------------------------------------------------------------------------


def _session(
    member: str,
    id_: str,
    remote: str,
    since: int,
    bytes_in: int,
    bytes_out: int,
    subjects: list[str],
) -> SessionOut:
    return SessionOut(
        member=member,
        id=id_,
        remote=remote,
        connected_since=datetime.fromtimestamp(since, UTC),
        subjects=subjects,
        messages_in=0,
        bytes_in=bytes_in,
        bytes_out=bytes_out,
    )


SESSIONS = [
    _session("a", "s1", "10.0.0.1:5000", 100, 10, 1000, ["/x/y"]),
    _session("a", "s2", "10.0.0.2:5001", 300, 500, 10, []),
    _session("b", "s3", "192.168.1.9:6000", 200, 50, 50, ["/x/y", "/x/z"]),
]


def _ids(query: SessionQuery) -> tuple[int, list[str]]:
    total, page, _hidden = select_sessions(SESSIONS, query)
    return total, [s.id for s in page]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (SessionQuery(), (3, ["s1", "s3", "s2"])),
        (SessionQuery(sort="-connected_since"), (3, ["s2", "s3", "s1"])),
        (SessionQuery(sort="-bytes_out"), (3, ["s1", "s3", "s2"])),
        (SessionQuery(sort="remote"), (3, ["s1", "s2", "s3"])),
        (SessionQuery(remote="10.0.0."), (2, ["s1", "s2"])),
        (SessionQuery(remote=":6000"), (1, ["s3"])),
        (SessionQuery(subject="/x/y"), (2, ["s1", "s3"])),
        (SessionQuery(subject="/x"), (0, [])),
        (SessionQuery(connected_after=datetime.fromtimestamp(200, UTC)), (2, ["s3", "s2"])),
        (SessionQuery(connected_before=datetime.fromtimestamp(200, UTC)), (2, ["s1", "s3"])),
        (SessionQuery(min_bytes_in=50), (2, ["s3", "s2"])),
        (SessionQuery(min_bytes_out=50, min_bytes_in=20), (1, ["s3"])),
        (SessionQuery(limit=1), (3, ["s1"])),
        (SessionQuery(limit=2, offset=2), (3, ["s2"])),
        (SessionQuery(offset=10), (3, [])),
    ],
)
def test_session_filters_sort_and_pages(
    query: SessionQuery, expected: tuple[int, list[str]]
) -> None:
    assert _ids(query) == expected


def test_clients_filters_and_internal_probes() -> None:
    """Issue 35: client id, transport, member and outbound filters; our own probes are left
    out (and counted in ``hidden``) unless asked for."""
    clients = [
        *SESSIONS,
        SESSIONS[0].model_copy(
            update={"id": "p1", "internal": True, "client_id": "", "transport": "websocket"}
        ),
        SESSIONS[1].model_copy(
            update={
                "id": "c2",
                "client_id": "alice-desk",
                "transport": "sse",
                "outbound_buffer_bytes": 900,
            }
        ),
    ]

    def pick(query: SessionQuery) -> tuple[int, list[str], int]:
        total, page, hidden = select_sessions(clients, query)
        return total, [c.id for c in page], hidden

    assert pick(SessionQuery()) == (4, ["s1", "s3", "c2", "s2"], 1)
    assert pick(SessionQuery(internal=True))[0] == 5
    assert pick(SessionQuery(client_id="alice")) == (1, ["c2"], 0)
    assert pick(SessionQuery(transport="sse")) == (1, ["c2"], 0)
    assert pick(SessionQuery(member="b")) == (1, ["s3"], 0)
    assert pick(SessionQuery(min_outbound_buffer_bytes=1)) == (1, ["c2"], 0)
    assert pick(SessionQuery(sort="-client_id", limit=1))[1] == ["c2"]


def test_a_sessions_answer_that_breaks_the_contract_names_the_field() -> None:
    member = MemberEndpoint("push-1", "http://h:1", "config")
    bad = [
        {
            "id": "x",
            "remote": "r",
            "connected_since": 1,
            "subjects": [],
            "messages_in": 0,
            "bytes_in": 0,
            "bytes_out": "lots",
        }
    ]
    with pytest.raises(MemberFailure, match="bytes_out"):
        parse_sessions(member, bad)


def test_parse_sessions_from_the_mbean_operation() -> None:
    member = MemberEndpoint("push-1", "http://h:1", "config")
    (session,) = parse_sessions(
        member,
        [
            {
                "id": "9f1c2a7be04d1133",
                "remote": "127.0.0.1:5555",
                "connected_since": 1_795_363_350_123,
                "subjects": ["/a/b"],
                "messages_in": 3,
                "bytes_in": 120,
                "bytes_out": 4096,
            }
        ],
    )
    assert session.member == "push-1"
    assert session.connected_since == datetime.fromtimestamp(1_795_363_350.123, UTC)
    assert (session.bytes_in, session.bytes_out, session.messages_in) == (120, 4096, 3)
