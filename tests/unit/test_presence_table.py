"""Presence (issue 25 item 2): the table against a naive model (the joins and leaves replayed
give the listed sessions), the per-member bound, the patterns, the client id and the memory per
entry the docs state."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.config.occupancy import OccupancySettings
from pushgrid.protocol.codec import Limits, decode_client_frame
from pushgrid.protocol.errors import ErrorCode, RemoteProtocolError
from pushgrid.protocol.frames import PresenceQuery, client_id_error
from pushgrid.server.core.presence import BYTES_PER_ENTRY, PresenceTable, Present
from pushgrid.server.presence import PresenceService

MEMBERS = st.sampled_from(["m1", "m2", "m3"])
SUBJECTS = st.sampled_from(["/a", "/b", "/c"])
LISTS = st.dictionaries(
    SUBJECTS,
    st.dictionaries(st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(["", "ann", "bob"])),
    max_size=3,
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("apply"), MEMBERS, LISTS),
        st.tuples(st.just("replace"), MEMBERS, LISTS),
        st.tuples(st.just("drop"), MEMBERS, st.just({})),
    ),
    max_size=40,
)


def _model_step(
    model: dict[str, dict[str, dict[str, str]]], kind: str, member: str, lists: Any
) -> None:
    held = model.setdefault(member, {})
    if kind in ("drop", "replace"):
        held.clear()
    held.update({s: dict(v) for s, v in lists.items()})


@settings(deadline=None)  # a shared, noisy machine: the first example may take 300 ms
@given(STEPS)
def test_the_table_lists_what_the_members_reported_and_its_changes_replay_to_it(
    steps: list[tuple[str, str, Any]],
) -> None:
    table = PresenceTable()
    model: dict[str, dict[str, dict[str, str]]] = {}
    replayed: set[tuple[str, str, str, str]] = set()  # (subject, member, session, client)
    for kind, member, lists in steps:
        changes = getattr(table, kind)(member, *([lists] if kind != "drop" else []))
        _model_step(model, kind, member, lists)
        for change in changes:
            key = (change.subject, change.present.member, change.present.session)
            entry = (*key, change.present.client_id)
            if change.event == "join":
                assert entry not in replayed, "a join of a session already there"
                replayed.add(entry)
            else:
                assert entry in replayed, "a leave of a session never joined"
                replayed.remove(entry)
        expected = {
            (subject, m, session, client)
            for m, held in model.items()
            for subject, sessions in held.items()
            for session, client in sessions.items()
        }
        assert replayed == expected
        for subject in ("/a", "/b", "/c"):
            listed = {(subject, p.member, p.session, p.client_id) for p in table.present(subject)}
            assert listed == {e for e in expected if e[0] == subject}
    assert table.entries() == len(replayed)


def test_a_dropped_member_s_sessions_leave_and_the_others_stay() -> None:
    table = PresenceTable()
    table.apply("m1", {"/chat": {"s1": "ann"}})
    table.apply("m2", {"/chat": {"s2": "bob"}, "/other": {"s3": ""}})
    left = table.drop("m2")
    assert sorted((c.event, c.subject, c.present.session) for c in left) == [
        ("leave", "/chat", "s2"),
        ("leave", "/other", "s3"),
    ]
    assert table.present("/chat") == [Present("s1", "ann", "m1")]
    assert table.present("/other") == []
    assert list(table.members()) == ["m1"]


def test_a_changed_client_id_is_a_leave_then_a_join() -> None:
    table = PresenceTable()
    table.apply("m1", {"/chat": {"s1": "ann"}})
    changes = table.apply("m1", {"/chat": {"s1": "anne"}})
    assert [(c.event, c.present.client_id) for c in changes] == [("leave", "ann"), ("join", "anne")]


def _presence(**keys: Any) -> PresenceService:
    settings = OccupancySettings.model_validate(keys)

    class Counts:
        def subscribers(self, subject: str) -> int:
            return 5

    return PresenceService("m1", settings, Counts())


class Hub:
    def __init__(self, sessions: dict[str, dict[str, str]]) -> None:
        self.sessions = sessions

    def present(self, subject: str) -> dict[str, str]:
        return dict(self.sessions.get(subject, {}))


def test_only_the_subjects_matching_the_patterns_keep_presence() -> None:
    presence = _presence(**{"Occupancy.PresencePatterns": "/Chat/*, /Rooms/*/members"})
    assert presence.enabled("/Chat/lobby")
    assert presence.enabled("/Chat/lobby/east")  # a last * covers deeper paths
    assert presence.enabled("/Rooms/a/members")
    assert not presence.enabled("/Rooms/a/topic")
    assert not presence.enabled("/Stocks/IBM")
    assert not presence.enabled("/pushgrid/presence")  # meta-subjects never
    assert not _presence().enabled("/Chat/lobby")  # no pattern: presence is off
    hub = Hub({"/Chat/lobby": {"s1": "ann"}, "/Stocks/IBM": {"s2": "bob"}})
    assert presence.local_changes(["/Chat/lobby", "/Stocks/IBM"], hub) == {
        "/Chat/lobby": {"s1": "ann"}
    }


def test_a_full_list_keeps_its_sessions_and_newcomers_fill_freed_places() -> None:
    presence = _presence(**{"Occupancy.PresencePatterns": "/Chat/*", "Occupancy.PresenceMax": 2})
    hub = Hub({"/Chat/x": {"s1": "", "s2": "", "s3": ""}})
    first = presence.local_changes(["/Chat/x"], hub)["/Chat/x"]
    assert len(first) == 2
    presence.table.apply("m1", {"/Chat/x": first})
    hub.sessions["/Chat/x"]["s4"] = ""  # a fourth: the list stays as it is
    assert presence.local_changes(["/Chat/x"], hub) == {}
    gone = next(iter(first))
    del hub.sessions["/Chat/x"][gone]  # one listed leaves: a newcomer takes its place
    after = presence.local_changes(["/Chat/x"], hub)["/Chat/x"]
    assert len(after) == 2
    assert gone not in after
    assert set(first) - {gone} <= set(after)
    answer = presence.answer("/Chat/x", 7)
    assert (answer.id, answer.subscribers) == (7, 5)


def test_the_answer_says_when_the_list_is_shorter_than_the_count() -> None:
    presence = _presence(**{"Occupancy.PresencePatterns": "/Chat/*"})
    presence.table.apply("m2", {"/Chat/x": {"s9": "zoe"}})
    answer = presence.answer("/Chat/x", None)
    assert (answer.truncated, answer.subscribers) == (True, 5)
    assert [(c.session, c.client_id, c.member) for c in answer.clients] == [("s9", "zoe", "m2")]


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("ann", True),
        ("user@example.com", True),
        ("a" * 64, True),
        ("", False),
        ("a" * 65, False),
        ("with space", False),
        ("é", False),
        ("a/b", False),
    ],
)
def test_a_client_id_is_1_to_64_characters_of_a_safe_set(value: str, valid: bool) -> None:
    assert (client_id_error(value) is None) is valid
    frame = json.dumps({"op": "subscribe", "subjects": [{"subject": "/a", "client_id": value}]})
    if valid:
        decode_client_frame(frame, Limits())
    else:
        with pytest.raises(RemoteProtocolError) as error:
            decode_client_frame(frame, Limits())
        assert error.value.code is ErrorCode.INVALID_FRAME


def test_the_presence_op_decodes_and_checks_its_subject() -> None:
    op = decode_client_frame('{"op":"presence","subject":"/Chat/x","id":3}', Limits())
    assert op == PresenceQuery("/Chat/x", 3)
    with pytest.raises(RemoteProtocolError) as error:
        decode_client_frame('{"op":"presence","subject":"no-slash","id":3}', Limits())
    assert error.value.code is ErrorCode.INVALID_SUBJECT


def test_a_listed_session_costs_at_most_the_documented_bytes() -> None:
    table = PresenceTable()
    n = 5_000
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for start in range(0, n, 100):  # 50 subjects of 100 sessions with 16-hex ids, 64-char clients
        sessions = {f"{i:016x}": f"client-{i:058d}" for i in range(start, start + 100)}
        table.apply("m2", {f"/Chat/room{start}": sessions})
    per_entry = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    assert table.entries() == n
    assert per_entry <= BYTES_PER_ENTRY, per_entry


def test_the_console_card_lists_the_clients_or_says_why_not() -> None:
    from pushgrid.console.pages.subjects import presence_problem, render_presence
    from pushgrid.console.provider import ProviderError
    from pushgrid.ops.api.subjects import PresenceOut, PresentClientOut

    def presence(subject: str, subscribers: int, *clients: PresentClientOut) -> PresenceOut:
        enabled = bool(clients)
        truncated = enabled and len(clients) < subscribers
        return PresenceOut(
            member="m1",
            subject=subject,
            enabled=enabled,
            subscribers=subscribers,
            clients=list(clients),
            truncated=truncated,
        )

    listed = render_presence(
        presence("/Chat/x", 3, PresentClientOut(session="s1", client_id="ann", member="m2"))
    )
    text = str(listed)
    assert "ann" in text
    assert "m2" in text
    assert "1 listed of 3" in text
    assert "PresenceMax" in text
    off = str(render_presence(presence("/Stocks/IBM", 4)))
    assert "keeps no presence" in off
    assert "4 subscribers" in off
    refused = presence_problem(ProviderError(403, "Forbidden", "the operator role is required"))
    assert "operator role" in str(refused)
