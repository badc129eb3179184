"""Watched subjects: the pattern syntax against a naive matcher (property tests), the watchlist's
cache, cap and errors, and its per-pattern totals, per-second values and windows."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.metrics.archive import WATCHED, ArchiveWriter, read_samples
from pushgrid.metrics.watched import WATCH_NAMES
from pushgrid.protocol.subjects import pattern_error, pattern_matches
from pushgrid.server.core.entitlement import matches
from pushgrid.server.core.watch import WatchError, WatchFeed, Watchlist


def naive(pattern: str, subject: str) -> bool:
    """The documented syntax as a regular expression, built independently of the matcher."""
    if pattern == "*":
        return True
    segments = pattern[1:].split("/")
    parts = ["[^/]+" if s == "*" else re.escape(s) for s in segments[:-1]]
    last = segments[-1]
    tail = "[^/]+(?:/[^/]+)*" if last == "*" else re.escape(last)
    return re.fullmatch("/" + "/".join([*parts, tail]), subject) is not None


SEGMENT = st.sampled_from(["a", "b", "c", "NYSE", "*x", "é"])
SUBJECTS = st.lists(SEGMENT, min_size=2, max_size=5).map(lambda s: "/" + "/".join(s))
PATTERNS = st.one_of(
    st.just("*"),
    st.lists(st.one_of(SEGMENT, st.just("*")), min_size=2, max_size=5).map(
        lambda s: "/" + "/".join(s)
    ),
)


@given(PATTERNS, SUBJECTS)
def test_pattern_matches_agrees_with_the_naive_matcher(pattern: str, subject: str) -> None:
    assert pattern_matches(pattern, subject) == naive(pattern, subject)
    assert matches(pattern, subject) == naive(pattern, subject)  # entitlement: one syntax


@settings(max_examples=60)
@given(st.lists(PATTERNS, max_size=12, unique=True), st.lists(SUBJECTS, max_size=30))
def test_watchlist_counts_each_subject_for_exactly_its_patterns(
    patterns: list[str], subjects: list[str]
) -> None:
    watchlist = Watchlist(cap=20)
    for pattern in patterns:
        watchlist.add(pattern)
    tally = {subject: [1, 2, 30, 4] for subject in subjects}
    watchlist.absorb(tally)
    watchlist.absorb(tally)  # the second time every subject is a cache hit
    assert watchlist.cache_misses == (len(set(subjects)) if patterns else 0)
    for pattern, stats in watchlist.patterns.items():
        matched = sum(1 for s in set(subjects) if naive(pattern, s))
        assert stats.counters["messages_in_total"] == 2 * matched
        assert stats.counters["messages_out_total"] == 4 * matched
        assert stats.counters["bytes_out_total"] == 60 * matched
        assert stats.counters["bytes_in_total"] == 8 * matched


def test_the_cache_is_invalidated_when_patterns_change() -> None:
    watchlist = Watchlist()
    watchlist.add("/Stocks/NYSE/*")
    assert [p.pattern for p in watchlist.matching("/Stocks/NYSE/IBM")] == ["/Stocks/NYSE/*"]
    watchlist.add("/Stocks/*")
    assert {p.pattern for p in watchlist.matching("/Stocks/NYSE/IBM")} == {
        "/Stocks/NYSE/*",
        "/Stocks/*",
    }
    watchlist.remove("/Stocks/NYSE/*")
    assert [p.pattern for p in watchlist.matching("/Stocks/NYSE/IBM")] == ["/Stocks/*"]


def test_the_cache_is_bounded() -> None:
    watchlist = Watchlist(cache_size=100)
    watchlist.add("/s/*")
    for n in range(350):
        watchlist.matching(f"/s/{n}")
        assert watchlist.cached_subjects <= 100


@pytest.mark.parametrize(
    ("pattern", "kind", "words"),
    [
        ("/Stocks//x", "invalid", "segment is empty"),
        ("Stocks/*", "invalid", "a pattern must start with '/'"),
        ("/*", "invalid", "two or more segments"),
        ("/dup/*", "duplicate", "already watched"),
        ("/third/*", "cap", "WatchedSubjects.MaxPatterns (2)"),
    ],
)
def test_bad_patterns_are_refused_with_a_clear_error(pattern: str, kind: str, words: str) -> None:
    watchlist = Watchlist(cap=2)
    watchlist.add("/dup/*")
    watchlist.add("/other/*")
    with pytest.raises(WatchError) as info:
        watchlist.add(pattern)
    assert info.value.kind == kind
    assert words in str(info.value)
    assert info.value.code == "watch"
    assert len(watchlist.patterns) == 2


def test_removing_an_unknown_pattern_is_an_error() -> None:
    with pytest.raises(WatchError) as info:
        Watchlist().remove("/x/*")
    assert info.value.kind == "unknown"


def test_pattern_error_accepts_star_and_patterns() -> None:
    assert pattern_error("*") is None
    assert pattern_error("/Stocks/*/IBM") is None
    assert pattern_error(3) is not None


class FakeHub:
    """The two hub calls the watchlist makes (the real hub is tested in test_hub.py)."""

    def __init__(self) -> None:
        self.tally: dict[str, list[int]] = {}
        self.subscriptions: dict[str, int] = {}

    def take_tally(self) -> dict[str, list[int]]:
        tally, self.tally = self.tally, {}
        return tally

    def subscriber_counts(self) -> Iterable[tuple[str, int]]:
        return self.subscriptions.items()


def test_readings_give_per_second_rates_gauges_and_windows() -> None:
    hub = FakeHub()
    watchlist = Watchlist(clock=lambda: 1000.0)
    feed = WatchFeed(hub, watchlist)
    watchlist.add("/Stocks/NYSE/*", "config")
    hub.subscriptions = {"/Stocks/NYSE/A": 3, "/Stocks/NYSE/B": 1, "/Stocks/NASDAQ/C": 5}
    feed.read(1000.0, 0.0)  # the first reading only starts the counters
    for second in range(1, 6):
        hub.tally = {"/Stocks/NYSE/A": [10, 30, 3000, 100], "/Stocks/NASDAQ/C": [7, 35, 99, 70]}
        feed.read(1000.0 + second, float(second))
    document = watchlist.document()
    (p,) = document["patterns"]
    assert p["totals"] == {
        "messages_in_total": 50,
        "messages_out_total": 150,
        "bytes_out_total": 15000,
        "bytes_in_total": 500,
    }
    assert (p["subscribers"], p["subjects"], p["source"]) == (4, 2, "config")
    assert p["ts"] == 1004
    current = {name: p["indicators"][name]["current"] for name in WATCH_NAMES}
    assert current == {
        "incoming_messages_per_second": 10.0,
        "outgoing_messages_per_second": 30.0,
        "incoming_bytes_per_second": 100.0,
        "outgoing_bytes_per_second": 3000.0,
        "subscribers": 4.0,
        "subjects": 2.0,
    }
    window = p["indicators"]["incoming_messages_per_second"]["windows"]["1m"]
    assert (window["count"], window["max"], window["avg"], window["stddev"]) == (5, 10, 10, 0)
    assert p["windows_ts"] == 1004


def test_the_hot_subjects_and_the_watchlist_both_see_every_delta() -> None:
    """The hot subjects take the tally through the feed; the watchlist sees it on the way, and
    a reading after them finds nothing twice."""
    hub = FakeHub()
    watchlist = Watchlist()
    feed = WatchFeed(hub, watchlist)
    watchlist.add("*")
    hub.tally = {"/a/b": [1, 1, 10, 5]}
    assert feed.take_tally() == {"/a/b": [1, 1, 10, 5]}  # what HotSubjects.fold_seconds does
    hub.tally = {"/a/c": [2, 0, 0, 6]}
    feed.read(10.0, 1.0)
    assert watchlist.patterns["*"].counters["messages_in_total"] == 3


def test_no_pattern_costs_no_work() -> None:
    watchlist = Watchlist()
    watchlist.absorb({"/a/b": [1, 1, 1, 1]})
    watchlist.read(1.0, 1.0, [("/a/b", 1)])
    assert watchlist.cache_misses == 0
    assert watchlist.document()["patterns"] == []


def test_each_second_of_each_pattern_is_archived_from_its_next_second(tmp_path: Path) -> None:
    """ADR 030: a line per pattern and second in ``watched-HH.csv``; a pattern added at run
    time has lines from its first whole second, a removed one none after its last."""
    hub = FakeHub()
    watchlist = Watchlist(clock=lambda: 1000.0)
    watchlist.archive = ArchiveWriter(
        tmp_path, "m1", WATCH_NAMES, prefix=WATCHED, keys=("pattern",)
    )
    feed = WatchFeed(hub, watchlist)
    watchlist.add("/A/*", "config")
    hub.subscriptions = {"/A/x": 2, "/B/y": 1}
    for second in range(8):
        if second == 3:
            watchlist.add("/B/*")
        if second == 6:
            watchlist.remove("/A/*")
        hub.tally = {"/A/x": [second, 0, 0, 10 * second], "/B/y": [1, 1, 50, 20]}
        feed.read(1000.0 + second, float(second))
    watchlist.archive.close()
    (path,) = tmp_path.rglob("watched-*.csv*")
    rows = read_samples(path)
    assert list(rows[0]) == ["ts", "node", "pattern", *WATCH_NAMES]
    seconds = {p: [int(r["ts"]) for r in rows if r["pattern"] == p] for p in ("/A/*", "/B/*")}
    assert seconds == {"/A/*": [1000, 1001, 1002, 1003, 1004], "/B/*": [1003, 1004, 1005, 1006]}
    a_in = [int(r["incoming_messages_per_second"]) for r in rows if r["pattern"] == "/A/*"]
    assert a_in == [1, 2, 3, 4, 5]  # the tally of the reading after each second
    b = [r for r in rows if r["pattern"] == "/B/*"]
    assert {(r["subscribers"], r["subjects"], r["incoming_bytes_per_second"]) for r in b} == {
        ("1", "1", "20")
    }
