"""The admin API's cluster hot-subject ranking (admin_api/services/hot.py ``merge``)."""

from __future__ import annotations

from pushgrid.admin_api.schemas_ops import HotEntry, MemberHot
from pushgrid.admin_api.services.hot import merge


def member(name: str, top_n: int, subscribers: dict[str, float]) -> MemberHot:
    entries = [
        HotEntry(subject=s, value=v, error=0.0)
        for s, v in sorted(subscribers.items(), key=lambda kv: (-kv[1], kv[0]))
    ][:top_n]
    return MemberHot(member=name, reachable=True, top_n=top_n, rankings={"subscribers": entries})


def test_a_member_that_lists_every_subject_it_has_adds_nothing_unlisted() -> None:
    cluster = merge([member("m1", 3, {"/a/x": 2, "/a/y": 1}), member("m2", 3, {"/a/x": 1})])
    rows = {e.subject: (e.value, e.error) for e in cluster.rankings["subscribers"]}
    assert rows == {"/a/x": (3.0, 0.0), "/a/y": (1.0, 0.0)}


def test_a_full_ranking_that_leaves_a_subject_out_widens_its_error_never_reads_exact() -> None:
    """Each member lists its top 2 of the subjects it has: m1 /a/c and /a/d (so an unlisted
    subject has at most 4 there), m2 /a/a and /a/b (at most 2)."""
    m1 = member("m1", 2, {"/a/c": 5, "/a/d": 4})
    m2 = member("m2", 2, {"/a/a": 3, "/a/b": 2, "/a/c": 2, "/a/d": 1})
    truth = {"/a/a": 3, "/a/b": 2, "/a/c": 7, "/a/d": 5}
    ranking = merge([m1, m2]).rankings["subscribers"]
    rows = {e.subject: (e.value, e.error) for e in ranking}
    assert rows == {"/a/a": (7.0, 4.0), "/a/c": (7.0, 2.0)}  # before: /a/c 5 "exact"
    for subject, (value, error) in rows.items():  # the members' meaning: over by <= error
        assert value - error <= truth[subject] <= value


def test_an_unreachable_member_bounds_nothing() -> None:
    down = MemberHot(member="m3", reachable=False, top_n=2)
    cluster = merge([member("m1", 2, {"/a/a": 1}), down])
    assert [(e.subject, e.value, e.error) for e in cluster.rankings["subscribers"]] == [
        ("/a/a", 1.0, 0.0)
    ]
