"""The subject browser's pure parts (ADR 051): the memory engine's removal of a dormant
snapshot, a member's ``Subjects.list`` answer (pattern, subscribed-only subjects, bounds), and
the admin API's merge, sort and page of the members' lists."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from pushgrid.admin_api.schemas_subjects import SubjectRow
from pushgrid.admin_api.services.subject_browser import SubjectQuery, select
from pushgrid.metrics.counters import Counters
from pushgrid.server.core.hub import Hub
from pushgrid.server.engine.base import PublishRequest
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.engine.memory import MemoryEngine
from pushgrid.server.monitoring import operations
from pushgrid.server.monitoring.operations import ServerOperations

EXPIRE = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _engine(clock: Clock) -> MemoryEngine:
    return MemoryEngine(EngineLimits(max_cached=5, expire_seconds=EXPIRE), clock=clock)


async def test_removing_a_dormant_snapshot_forgets_the_subject_and_frees_its_bytes() -> None:
    clock = Clock()
    engine = _engine(clock)
    first = engine.publish_now(PublishRequest("/a/b", "snapshot", {"f": "v"}))
    engine.publish_now(PublishRequest("/a/c", "other", {}))
    clock.now += EXPIRE + 1
    engine.sweep()  # both dormant: snapshot, epoch and seq kept, no cache
    held = engine._held_bytes()
    assert engine.remove_snapshot_now("/a/b") is True
    assert engine._held_bytes() == held - len("snapshotfv")
    assert [e.subject for e in engine.catalog()] == ["/a/c"]
    # nothing of it is left: a new publish must not reuse (epoch, 1) of the old message
    again = engine.publish_now(PublishRequest("/a/b", "new", {}))
    assert again.seq == 1
    assert again.epoch != first.epoch


async def test_a_member_lists_matching_subjects_with_its_subscribers() -> None:
    clock = Clock()
    engine = _engine(clock)
    hub = Hub(engine, Counters())
    engine.publish_now(PublishRequest("/Stocks/NYSE/IBM", "193", {"v": "6"}))
    engine.publish_now(PublishRequest("/Stocks/NASDAQ/AAPL", "1", {}, retained=False))
    engine.publish_now(PublishRequest("/Chat/room", "hi", {}))
    hub.subscriber_counts = lambda: iter([("/Stocks/NYSE/IBM", 2), ("/Stocks/LSE/VOD", 1)])  # type: ignore[method-assign]
    ops = ServerOperations(hub, engine)
    listed = await ops.subject_list("/Stocks/*")
    rows = {row["subject"]: row for row in listed["subjects"]}
    assert set(rows) == {"/Stocks/NYSE/IBM", "/Stocks/NASDAQ/AAPL", "/Stocks/LSE/VOD"}
    assert rows["/Stocks/NYSE/IBM"] == {
        "subject": "/Stocks/NYSE/IBM",
        "subscribers": 2,
        "snapshot_bytes": len("193v6"),
        "last_publish": int(clock.now * 1000),
    }
    assert rows["/Stocks/NASDAQ/AAPL"]["snapshot_bytes"] == 0
    assert rows["/Stocks/LSE/VOD"] == {  # subscribed, never published
        "subject": "/Stocks/LSE/VOD",
        "subscribers": 1,
        "snapshot_bytes": 0,
        "last_publish": 0,
    }
    assert listed["truncated"] is False
    assert [r["subject"] for r in (await ops.subject_list("/Stocks/NYSE/*"))["subjects"]] == [
        "/Stocks/NYSE/IBM"
    ]
    with pytest.raises(ValueError, match="must start with"):
        await ops.subject_list("Stocks")


async def test_a_member_lists_at_most_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine(Clock())
    for i in range(5):
        engine.publish_now(PublishRequest(f"/s/{i}", "x", {}))
    monkeypatch.setattr(operations, "MAX_LISTED", 3)
    listed = await ServerOperations(Hub(engine, Counters()), engine).subject_list("*")
    assert (len(listed["subjects"]), listed["truncated"]) == (3, True)


async def test_history_is_bounded_and_oldest_first() -> None:
    engine = _engine(Clock())
    for i in range(1, 8):
        engine.publish_now(PublishRequest("/h/x", f"m{i}", {}))
    ops = ServerOperations(Hub(engine, Counters()), engine)
    assert [m["seq"] for m in await ops.subject_history("/h/x", 3)] == [5, 6, 7]
    assert len(await ops.subject_history("/h/x", 10_000)) == 5  # the cache's own bound
    with pytest.raises(ValueError, match="must start with"):
        await ops.subject_history("nope", 3)


def _row(subject: str, subscribers: int, size: int, last: int | None) -> SubjectRow:
    at = None if last is None else datetime.fromtimestamp(last, UTC)
    return SubjectRow(
        subject=subject, subscribers=subscribers, snapshot_bytes=size, last_publish=at, members=[]
    )


def test_pages_are_sorted_then_cut() -> None:
    rows = [_row("/c/x", 5, 10, 3), _row("/a/x", 5, 30, None), _row("/b/x", 9, 20, 1)]

    def names(query: SubjectQuery) -> list[str]:
        return [r.subject for r in select(rows, query)]

    assert names(SubjectQuery()) == ["/a/x", "/b/x", "/c/x"]
    assert names(SubjectQuery(sort="-subject")) == ["/c/x", "/b/x", "/a/x"]
    assert names(SubjectQuery(sort="-subscribers")) == ["/b/x", "/a/x", "/c/x"]  # ties by subject
    assert names(SubjectQuery(sort="snapshot_bytes", offset=1, limit=1)) == ["/b/x"]
    assert names(SubjectQuery(sort="last_publish")) == ["/a/x", "/b/x", "/c/x"]
    assert names(SubjectQuery(sort="-last_publish")) == ["/c/x", "/b/x", "/a/x"]


def test_the_console_page_state_goes_to_the_url_and_back() -> None:
    from pushgrid.console.pages.subject_browser import DEFAULT, query_of, search_of

    query = {"pattern": "/Stocks/*", "sort": "-subscribers", "offset": 25}
    assert search_of(query) == "?pattern=%2FStocks%2F%2A&sort=-subscribers&offset=25"
    assert query_of(search_of(query)) == query
    assert search_of(DEFAULT) == ""  # a plain link stays plain
    assert query_of("") == DEFAULT
    # what a hand-edited URL cannot break: an unknown sort, a bad offset
    assert query_of("?sort=content&offset=-3&pattern=") == DEFAULT
    assert query_of("?offset=x")["offset"] == 0


def test_two_workers_rows_of_one_subject_add_their_subscribers() -> None:
    """The owner has the snapshot and the last publish, the other worker's sessions follow it
    too: one row, subscribers added; a subject only one of them lists stays as it is."""
    owner = {
        "subjects": [
            {"subject": "/a", "subscribers": 2, "snapshot_bytes": 5, "last_publish": 1000},
            {"subject": "/b", "subscribers": 0, "snapshot_bytes": 3, "last_publish": 900},
        ],
        "truncated": False,
    }
    other = {
        "subjects": [
            {"subject": "/a", "subscribers": 3, "snapshot_bytes": 0, "last_publish": 0},
            {"subject": "/c", "subscribers": 1, "snapshot_bytes": 0, "last_publish": 0},
        ],
        "truncated": True,
    }
    merged = operations.merged_rows(owner, other)
    assert merged["truncated"] is True
    rows = {row["subject"]: row for row in merged["subjects"]}
    assert rows == {
        "/a": {"subject": "/a", "subscribers": 5, "snapshot_bytes": 5, "last_publish": 1000},
        "/b": {"subject": "/b", "subscribers": 0, "snapshot_bytes": 3, "last_publish": 900},
        "/c": {"subject": "/c", "subscribers": 1, "snapshot_bytes": 0, "last_publish": 0},
    }
    assert merged_rows_are_symmetric(owner, other)


def merged_rows_are_symmetric(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def key(m: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted(tuple(sorted(r.items())) for r in m["subjects"])

    return key(operations.merged_rows(a, b)) == key(operations.merged_rows(b, a))
