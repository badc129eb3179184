"""The occupancy table against a naive model: counts are sums, events are the zero crossings."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushgrid.server.core.occupancy import OccupancyTable, Transition

MEMBERS = st.sampled_from(["m1", "m2", "m3"])
SUBJECTS = st.sampled_from(["/a", "/b", "/c", "/d"])
COUNTS = st.dictionaries(SUBJECTS, st.integers(min_value=0, max_value=3), max_size=4)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("apply"), MEMBERS, COUNTS),
        st.tuples(st.just("replace"), MEMBERS, COUNTS),
        st.tuples(st.just("drop"), MEMBERS, st.just({})),
    ),
    max_size=40,
)


def _totals(model: dict[str, dict[str, int]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for held in model.values():
        for subject, count in held.items():
            totals[subject] = totals.get(subject, 0) + count
    return {s: c for s, c in totals.items() if c}


def _model_step(model: dict[str, dict[str, int]], kind: str, member: str, counts: Any) -> None:
    held = model.setdefault(member, {})
    if kind == "drop":
        held.clear()
    elif kind == "replace":
        held.clear()
        held.update(counts)
    else:
        held.update(counts)


def _table_step(table: OccupancyTable, kind: str, member: str, counts: Any) -> list[Transition]:
    if kind == "drop":
        return table.drop(member)
    if kind == "replace":
        return table.replace(member, counts)
    return table.apply(member, counts)


@given(STEPS)
def test_counts_are_sums_and_events_are_exactly_the_zero_crossings(steps: list[Any]) -> None:
    table = OccupancyTable()
    model: dict[str, dict[str, int]] = {}
    last_event: dict[str, str] = {}
    for kind, member, counts in steps:
        before = _totals(model)
        transitions = _table_step(table, kind, member, counts)
        _model_step(model, kind, member, counts)
        after = _totals(model)
        expected = {s: "occupied" for s in after.keys() - before.keys()} | {
            s: "vacated" for s in before.keys() - after.keys()
        }
        assert {t.subject: t.event for t in transitions} == expected
        assert len(transitions) == len(expected)  # one event per subject and change
        for t in transitions:
            assert t.subscribers == after.get(t.subject, 0)
            assert last_event.get(t.subject, "vacated") != t.event  # they alternate
            last_event[t.subject] = t.event
        for subject in ("/a", "/b", "/c", "/d"):
            assert table.subscribers(subject) == after.get(subject, 0)
            assert sum(table.by_member(subject).values()) == after.get(subject, 0)
        assert table.occupied() == len(after)


def test_a_member_that_dies_vacates_what_only_it_occupied() -> None:
    table = OccupancyTable()
    assert table.apply("m1", {"/a": 2, "/b": 1}) == [
        Transition("/a", "occupied", 2),
        Transition("/b", "occupied", 1),
    ]
    assert table.apply("m2", {"/b": 3}) == []  # /b was occupied already
    assert table.drop("m1") == [Transition("/a", "vacated", 0)]
    assert table.subscribers("/b") == 3
    assert table.by_member("/b") == {"m2": 3}
    assert list(table.members()) == ["m2"]


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        OccupancyTable().apply("m1", {"/a": -1})
