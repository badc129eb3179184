"""Which members answer (admin_api/answering.py) and who announces an alert (issue 34, item 4
rows 1 and 3): pure code and one event loop, no network."""

from __future__ import annotations

import asyncio

import pytest

from pushgrid.admin_api.answering import Answering, Silenced, not_answering_text
from pushgrid.admin_api.member_client import MemberEndpoint
from pushgrid.admin_api.services.alerts import announcers
from pushgrid.ops.cluster import ClusterDocument, ClusterMember

URL = "http://127.0.0.1:8901"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_silence_starts_at_the_first_miss_and_ends_at_an_answer() -> None:
    clock = Clock()
    answering = Answering(clock)
    assert answering.silent_for(URL) is None
    assert answering.missed(URL) == 0.0
    clock.now += 7.9
    assert answering.missed(URL) == pytest.approx(7.9), "a second miss keeps the start"
    assert answering.silent_for(URL) == pytest.approx(7.9)
    assert not_answering_text(7.9) == "not answering for 7 s"
    answering.refused(URL)  # nothing listens any more: down, not silent
    assert answering.silent_for(URL) is None
    answering.missed(URL)
    answering.answered(URL)
    assert answering.silent_for(URL) is None


async def test_a_request_waiting_for_a_member_is_dropped_when_it_goes_silent() -> None:
    answering = Answering()
    never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(answering.unless_silent(URL, never))
    await asyncio.sleep(0)
    assert not waiting.done()
    answering.missed(URL)  # the watch's look got no answer
    with pytest.raises(Silenced, match="not answering for 0 s"):
        await waiting
    assert never.cancelled(), "the request itself is cancelled, not left behind"


async def test_a_request_that_answers_is_not_disturbed() -> None:
    async def answer() -> str:
        await asyncio.sleep(0)
        return "value"

    assert await Answering().unless_silent(URL, answer()) == "value"


def _member(name: str) -> MemberEndpoint:
    return MemberEndpoint(name, f"http://127.0.0.1:89{name[-1]}0", "config")


def _view(name: str, mode: str = "guaranteed") -> ClusterDocument:
    entries = [
        ClusterMember(
            name=f"m{i}",
            index=i,
            address=f"127.0.0.1:71{i}0",
            seed=True,
            state="up",
            is_self=f"m{i}" == name,
            client_urls=[],
            monitor_urls=[],
            last_seen_seconds=None,
        )
        for i in (1, 2, 3)
    ]
    return ClusterDocument(
        engine="nats" if mode != "standalone" else "memory",
        mode=mode,
        health="ok",
        health_reasons=[],
        quorum=True,
        quorum_size=2,
        seeds=3,
        members_up=3,
        members=entries if mode != "standalone" else [],
        nats_connected=True,
        meta_leader=None,
        stream_leader=None,
        replicas=[],
        stream_messages=0,
        config_mismatch=[],
    )


def test_a_hung_cluster_member_is_announced_for_by_the_healthy_ones() -> None:
    members = [_member("m1"), _member("m2"), _member("m3")]
    alone, clustered = announcers(members, [_view("m1"), None, _view("m3")])
    assert alone == [], "m2 hangs: the cluster's healthy members speak for it"
    assert [m.name for m in clustered] == ["m1", "m3"]


def test_standalone_and_unknown_members_announce_for_themselves() -> None:
    members = [_member("s1"), _member("s2")]
    alone, clustered = announcers(members, [_view("s1", "standalone"), None])
    assert [m.name for m in alone] == ["s1", "s2"]
    assert clustered == []
