"""Delivery reports (ADR 048): the client's clock-offset estimate, what it measures and
reports (client/delivery.py, client/protocol.py), the codec's report rules, and the server's
book (server/core/delivery.py)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushgrid.client.backoff import Backoff, BackoffPolicy
from pushgrid.client.delivery import ClockOffset, DeliveryReporter
from pushgrid.client.protocol import ClientProtocol, Send
from pushgrid.client.servers import ServerPool, parse_servers
from pushgrid.protocol.codec import Limits, decode_client_frame
from pushgrid.protocol.errors import ErrorCode, RemoteProtocolError
from pushgrid.protocol.frames import (
    DeliveryReport,
    MessageFrame,
    Ping,
    Pong,
    ReportEntry,
    Subscribe,
    Subscribed,
    Welcome,
)
from pushgrid.protocol.latency import BUCKET_COUNT, MAX_COUNT, bucket_of
from pushgrid.server.core.delivery import DeliveryBook, SessionDelivery

S = "/a/b"
WELCOME = Welcome("srv", "1.1", "sess", keepalive=10.0, max_message_size=1000, max_subscriptions=9)

# --- the offset estimator ----------------------------------------------------------------------


@given(
    offset=st.integers(-(10**7), 10**7),
    up=st.lists(st.integers(0, 50_000), min_size=1, max_size=8),
    down=st.lists(st.integers(0, 50_000), min_size=8, max_size=8),
)
def test_the_offset_error_is_at_most_half_the_best_round_trip(
    offset: int, up: list[int], down: list[int]
) -> None:
    """Each exchange: the ping takes ``up`` us, the pong ``down`` us; the server's clock is
    ``offset`` us ahead (all in microseconds, as the client keeps them)."""
    clock = ClockOffset()
    t = 1_800_000_000_000_000.0
    for d1, d2 in zip(up, down, strict=False):
        clock.add(t, t + d1 + offset, t + d1 + d2)
        t += 1e6
    best = clock.best
    assert best is not None
    assert best.rtt == min(d1 + d2 for d1, d2 in zip(up, down, strict=False))
    assert abs(best.offset - offset) <= best.rtt / 2


def test_the_minimum_round_trip_of_the_newest_samples_wins() -> None:
    clock = ClockOffset(samples=3)
    clock.add(0, 5_000_050, 100)  # rtt 100, offset 5 s: symmetric and fast
    clock.add(1000, 5_009_000, 11_000)  # rtt 10 ms, its answer late: offset +3 ms wrong
    assert clock.offset == 5_000_000
    clock.add(2000, 5_003_000, 4000)
    clock.add(3000, 5_004_000, 5000)  # the fast sample is now out of the last 3
    assert clock.best is not None
    assert clock.best.rtt == 2000
    assert clock.add(10, 0, 5) is None  # the clock stepped back: ignored
    clock.clear()
    assert clock.offset is None


def test_the_reporter_is_bounded_and_counts_nothing_before_an_offset() -> None:
    reporter = DeliveryReporter(max_subjects=2)
    assert reporter.latency(S, 1_000, 2_000) is None  # no offset yet
    reporter.clock.add(0, 500, 0)  # server clock 500 us ahead
    assert reporter.latency(S, 1_000, 2_000) == 1_500
    reporter.latency("/a/c", 1_000, 1_000)
    reporter.latency("/a/d", 1_000, 1_000)  # a third subject: the unnamed entry
    reporter.count("/a/e", "gaps")
    report = reporter.report(5.0)
    assert report is not None
    assert [(e.subject, e.latency, e.gaps) for e in report.entries] == [
        (S, [(bucket_of(1_500), 1)], 0),
        ("/a/c", [(bucket_of(500), 1)], 0),
        (None, [(bucket_of(500), 1)], 1),
    ]
    assert report.offset == 500
    assert report.rtt == 0
    assert reporter.report(5.0) is None  # a new, empty period


# --- the client protocol ---------------------------------------------------------------------


class Clock:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self) -> float:
        return self.seconds


def reporting(wall: Clock) -> ClientProtocol:
    rng = random.Random(1)
    pool = ServerPool(parse_servers(["127.0.0.1:1"]), rng)
    policy = BackoffPolicy(base=1.0, quick_retries=1, jitter=0.0, cap=8.0, stable_after=10.0)
    return ClientProtocol(pool, Backoff(policy, rng), rng, report_interval=5.0, wall_clock=wall)


def frames(actions: Sequence[object]) -> list[msgspec.Struct]:
    return [a.frame for a in actions if isinstance(a, Send)]


def update(seq: int, ingress: int, epoch: str = "e1") -> bytes:
    frame = MessageFrame("update", S, "c", {}, epoch, seq, "guaranteed", True, 0, ingress=ingress)
    return msgspec.json.encode(frame)


@pytest.mark.parametrize("skew", [-5.0, 0.0, 5.0])
def test_the_client_reports_latency_on_the_servers_clock_whatever_its_own(skew: float) -> None:
    server_now = 1_800_000_000.0
    wall = Clock(server_now + skew)  # the client's clock is `skew` seconds off
    p = reporting(wall)
    p.start()
    (ping,) = [f for f in frames(p.welcome_received(WELCOME, 0.0)) if isinstance(f, Ping)]
    wall.seconds += 0.002  # a 2 ms round trip, the server answered halfway
    p.data_received(msgspec.json.encode(Pong(ping.id, int((server_now + 0.001) * 1e6))), 0.002)
    (subscribe,) = frames(p.subscribe([S], 0, 0))
    assert isinstance(subscribe, Subscribe)
    p.data_received(msgspec.json.encode(Subscribed(S, "allow", "none", "e1", 0, subscribe.id)), 0)
    wall.seconds = server_now + skew + 1.0
    p.data_received(update(1, int((server_now + 1.0 - 0.030) * 1e6)), 1.0)  # 30 ms late
    p.data_received(update(1, int((server_now + 1.0) * 1e6)), 1.0)  # a duplicate
    p.data_received(update(5, int((server_now + 1.0) * 1e6)), 1.0)  # a gap: 2..4 missing
    (report,) = [f for f in frames(p.timer_fired(5.0)) if isinstance(f, DeliveryReport)]
    (entry,) = report.entries
    assert entry.subject == S
    assert entry.latency == [(bucket_of(30_000), 1)]
    assert (entry.gaps, entry.duplicates, entry.resyncs) == (1, 1, 0)
    assert abs(report.offset + skew * 1e6) < 1
    assert report.rtt == 2000
    assert report.interval == 5.0


def test_recoveries_and_new_epochs_are_counted() -> None:
    p = reporting(Clock(1.0))
    p.start()
    p.welcome_received(WELCOME, 0.0)
    (_subscribe,) = frames(p.subscribe([S], 0, 0))
    p.data_received(msgspec.json.encode(Subscribed(S, "allow", "recovered", "e1", 3, 1)), 0)
    p.data_received(msgspec.json.encode(Subscribed(S, "allow", "failed", "e1", 9, 1)), 0)
    p.data_received(update(10, 0), 0)
    p.data_received(update(1, 0, epoch="e2"), 0)  # the numbering restarted
    (report,) = [f for f in frames(p.timer_fired(5.0)) if isinstance(f, DeliveryReport)]
    (entry,) = report.entries
    assert (entry.recovered, entry.recovery_failed, entry.resyncs) == (1, 1, 2)
    assert entry.latency == []  # no ingress on these messages: no latency


def test_reports_can_be_turned_off() -> None:
    rng = random.Random(1)
    pool = ServerPool(parse_servers(["127.0.0.1:1"]), rng)
    p = ClientProtocol(pool, Backoff(BackoffPolicy(), rng), rng, reports=False)
    p.start()
    assert not [f for f in frames(p.welcome_received(WELCOME, 0.0)) if isinstance(f, Ping)]
    assert p.deadline() == WELCOME.keepalive  # only the keepalive: no report, no clock ping


# --- the codec's rules -----------------------------------------------------------------------


def decode(report: dict[str, object]) -> object:
    return decode_client_frame(msgspec.json.encode({"op": "report", "id": 7, **report}), Limits())


def test_a_valid_report_decodes() -> None:
    report = decode(
        {
            "interval": 5,
            "offset": -120,
            "rtt": 800,
            "entries": [{"subject": S, "latency": [[3, 2], [40, 1]], "gaps": 1}, {"resyncs": 2}],
        }
    )
    assert report == DeliveryReport(
        [ReportEntry(S, [(3, 2), (40, 1)], gaps=1), ReportEntry(resyncs=2)], 5.0, -120, 800, 7
    )


ENTRY = {"subject": S, "latency": [[3, 2]]}


@pytest.mark.parametrize(
    "report",
    [
        {"interval": 5, "entries": [{"latency": [[BUCKET_COUNT, 1]]}]},
        {"interval": 5, "entries": [{"latency": [[4, 1], [3, 1]]}]},
        {"interval": 5, "entries": [{"latency": [[4, 1], [4, 1]]}]},
        {"interval": 5, "entries": [{"latency": [[4, 0]]}]},
        {"interval": 5, "entries": [{"latency": [[4, MAX_COUNT + 1]]}]},
        {"interval": 5, "entries": [{"latency": [[-1, 1]]}]},
        {"interval": 5, "entries": [{"gaps": -1}]},
        {"interval": 5, "entries": [{"gaps": MAX_COUNT + 1}]},
        {"interval": 5, "entries": [ENTRY, ENTRY]},
        {"interval": 5, "entries": [{"gaps": 1}, {"gaps": 1}]},
        {"interval": 5, "entries": [{"subject": f"/a/{i}"} for i in range(65)]},
        {"interval": 5, "entries": [{"subject": "not a subject"}]},
        {"interval": 0, "entries": []},
        {"interval": 5, "rtt": -1, "entries": []},
        {"interval": 5, "entries": [{"latency": "3:2"}]},
        {"entries": []},
    ],
)
def test_a_broken_report_is_refused_whole_with_invalid_report(report: dict[str, object]) -> None:
    with pytest.raises(RemoteProtocolError) as refused:
        decode(report)
    assert refused.value.code is ErrorCode.INVALID_REPORT
    assert refused.value.request_id == 7


# --- the server's book ---------------------------------------------------------------------


def test_the_book_adds_reports_to_the_member_its_patterns_and_the_session() -> None:
    now = [1000.0]
    book = DeliveryBook(clock=lambda: now[0])
    book.patterns = lambda subject: ["/a/*"] if subject.startswith("/a/") else []
    session = SessionDelivery()
    report = DeliveryReport(
        [
            ReportEntry(S, [(30, 3)], gaps=1),
            ReportEntry("/b/c", [(40, 1)]),
            ReportEntry(None, [(50, 1)]),
        ],
        5.0,
        offset=-4,
        rtt=9,
    )
    book.add_report(report, session)
    book.leg("engine", 250.0)
    recent = book.recent()
    assert recent.member.latency.count == 5
    assert recent.member.loss["gaps"] == 1
    assert recent.patterns["/a/*"].latency.pairs() == [(30, 3)]
    assert recent.legs["engine"].pairs() == [(bucket_of(250.0), 1)]
    assert session.totals.latency.count == 5
    assert (session.offset_us, session.rtt_us) == (-4, 9)
    now[0] += 61  # out of the window, still in the totals
    assert book.recent().member.latency.count == 0
    assert book.totals.latency.count == 5
    assert book.pattern_totals["/a/*"].loss["gaps"] == 1
    book.keep_patterns(set())
    assert book.pattern_totals == {}
