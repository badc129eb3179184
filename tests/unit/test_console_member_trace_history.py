"""The Live trace page's trace by client or subject (issue 35 item 2) and the Alerts history's
pager with its query in the URL (issue 35 item 4): the console's pure functions."""

from __future__ import annotations

from typing import Any

from pushgrid.console.pages import alert_history, member_trace


def _event(index: int, at: str = "2026-01-01T10:00:00.120000+00:00") -> dict[str, Any]:
    return {
        "index": index,
        "member": "m1",
        "at": at,
        "direction": "out",
        "session": "s1",
        "client_id": "desk-7",
        "subject": "/a",
        "size": 3,
        "text": "abc",
    }


OPENED = {"id": "t1", "kind": "client", "value": "desk-7", "dropped": 0, "members": []}


def test_a_trace_s_events_are_merged_once_and_bounded() -> None:
    state = member_trace.advance(OPENED, None, None)
    assert state is not None
    assert (state["after"], state["events"]) == (-1, [])
    view = {
        "id": "t1",
        "next_index": 2,
        "dropped": 0,
        "members": [],
        "events": [_event(0), _event(1)],
    }
    state = member_trace.advance(OPENED, view, state)
    assert state is not None
    assert state["after"] == 1
    overlapping = {**view, "next_index": 3, "events": [_event(1), _event(2)]}
    state = member_trace.advance(OPENED, overlapping, state)
    assert state is not None
    assert [e["index"] for e in state["events"]] == [0, 1, 2]
    # an answer about another trace (a poll in flight when a new one was started) changes nothing
    assert member_trace.advance(OPENED, {**overlapping, "id": "t0"}, state) == state
    assert member_trace.advance(None, overlapping, state) is None  # stopped
    many = [_event(i) for i in range(member_trace.KEEP + 50)]
    assert len(member_trace.merge([], many)) == member_trace.KEEP


def test_events_are_shown_newest_first_with_millisecond_times() -> None:
    shown = repr(member_trace.render_events([_event(0), _event(1, "2026-01-01T10:00:01.007Z")]))
    assert shown.index("10:00:01.007 UTC") < shown.index("10:00:00.120 UTC")
    assert shown.index("data-index='1'") < shown.index("data-index='0'")


def test_the_history_query_round_trips_through_the_url() -> None:
    assert alert_history.query_of("") == alert_history.DEFAULT
    assert alert_history.search_of(alert_history.DEFAULT) == ""
    query = {"rule": 3, "target": "m1", "state": "resolved", "range": "7 d", "offset": 50}
    search = alert_history.search_of(query)
    assert search == "?rule=3&target=m1&state=resolved&range=7+d&offset=50"
    assert alert_history.query_of(search) == query
    # bad values: the defaults, never an error
    bad = alert_history.query_of("?rule=x&state=gone&range=9y&offset=-4&target=" + "t" * 99)
    assert bad == {**alert_history.DEFAULT, "target": "t" * 64}


def test_the_history_pager_says_which_changes_it_shows() -> None:
    page = {"total": 120, "offset": 50, "items": [{}] * 50}
    assert alert_history.pager_text(page) == "51–100 of 120"
    assert alert_history.pager_text({"total": 0, "offset": 0, "items": []}) == "no change"
