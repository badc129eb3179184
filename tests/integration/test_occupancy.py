"""Occupancy (issue 25 item 2): cluster-wide subscriber counts, occupied/vacated events on the
meta-subject and on a signed webhook, correct across members and after a member is SIGKILLed."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from .cluster import Cluster
from .pgtest import DEFAULT_TIMEOUT, ServerProcess, WsClient, free_port, jolokia_exec

pytestmark = pytest.mark.timeout(240)

EVENTS = "/pushgrid/occupancy"
SECRET = "occupancy-webhook-secret"
SUBJECTS_MBEAN = "pushgrid:type=Subjects"
SHARED = "/Stocks/shared"  # a subscriber on m2 and one on the member killed
ONLY_VICTIM = "/Stocks/only-victim"  # subscribers only on the member killed


class Receiver:
    """A webhook receiver on 127.0.0.1 that checks every request's signature."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.bad_signatures = 0
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                stamp = self.headers.get("x-pushgrid-timestamp", "")
                mac = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256)
                if self.headers.get("x-pushgrid-signature") != "sha256=" + mac.hexdigest():
                    received.bad_signatures += 1
                else:
                    received.events.extend(json.loads(body)["events"])
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _webhook_settings(receiver: Receiver) -> dict[str, Any]:
    return {"Occupancy.Webhook": receiver.url, "Occupancy.WebhookSecret": SECRET}


@pytest.fixture
def receiver() -> Any:
    hook = Receiver()
    yield hook
    hook.close()


async def _eventually(check: Callable[[], Any], what: str, within: float = DEFAULT_TIMEOUT) -> Any:
    """Poll ``check`` (plain or async) until it returns something true; return that."""
    deadline = time.monotonic() + within
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.1)


async def _occupancy(member: ServerProcess, subject: str) -> dict[str, Any]:
    answer = await jolokia_exec(member, SUBJECTS_MBEAN, "occupancy", [subject])
    assert answer["status"] == 200, answer
    value: dict[str, Any] = answer["value"]
    return value


def _events(client: WsClient, subject: str) -> list[str]:
    """The occupancy events about ``subject`` the client received so far, in order."""
    return [
        f["fields"]["event"]
        for f in client.buffer
        if f.get("type") == "message"
        and f.get("subject") == EVENTS
        and f.get("fields", {}).get("subject") == subject
    ]


async def test_one_server_reports_occupied_and_vacated_on_the_meta_subject_and_the_webhook(
    server_factory: Callable[..., ServerProcess], connect: Any, receiver: Receiver
) -> None:
    srv = server_factory(
        ServerName="occ-1",
        MetaSubjectInterval=0,
        **_webhook_settings(receiver),
    )
    watcher = await connect(srv)
    assert (await watcher.subscribe(EVENTS))["type"] == "subscribed"
    first, second = await connect(srv), await connect(srv)
    await first.subscribe("/Stocks/NYSE/IBM")
    await _eventually(lambda: _events(watcher, "/Stocks/NYSE/IBM") == ["occupied"], "occupied")
    await second.subscribe("/Stocks/NYSE/IBM")  # a second subscriber: no new event
    value = await _eventually(
        lambda: _count_is(srv, "/Stocks/NYSE/IBM", 2), "two subscribers counted"
    )
    assert value["members"] == {"occ-1": 2}
    await first.close()
    await _eventually(lambda: _count_is(srv, "/Stocks/NYSE/IBM", 1), "one subscriber left")
    assert _events(watcher, "/Stocks/NYSE/IBM") == ["occupied"]
    await second.close()
    await _eventually(
        lambda: _events(watcher, "/Stocks/NYSE/IBM") == ["occupied", "vacated"], "vacated"
    )
    await _eventually(lambda: len(receiver.events) == 2, "both events at the webhook")
    assert [(e["event"], e["subject"], e["subscribers"]) for e in receiver.events] == [
        ("occupied", "/Stocks/NYSE/IBM", 1),
        ("vacated", "/Stocks/NYSE/IBM", 0),
    ]
    assert len({e["id"] for e in receiver.events}) == 2
    assert receiver.bad_signatures == 0
    mbean = await jolokia_exec(srv, SUBJECTS_MBEAN, "occupancy", ["/nobody/here"])
    assert mbean["value"] == {"subject": "/nobody/here", "subscribers": 0, "members": {}}


async def _count_is(member: ServerProcess, subject: str, count: int) -> dict[str, Any] | None:
    value = await _occupancy(member, subject)
    return value if value["subscribers"] == count else None


@pytest.mark.parametrize("killed", [3, 1], ids=["a-member", "the-emitter"])
async def test_counts_are_cluster_wide_and_a_killed_members_subscribers_are_vacated(
    tmp_path: Path, connect: Any, receiver: Receiver, killed: int
) -> None:
    """m1, the first member by name, sends the events; when it is the one killed, m2 takes
    over and still reports what the death vacated."""
    cluster = Cluster(
        tmp_path,
        configured=3,
        mode="Standard",
        **_webhook_settings(receiver),
    )
    try:
        cluster.start()
        m2, victim = cluster.member(2), cluster.member(killed)
        other = cluster.member(4 - killed)  # the third member: m1 or m3
        survivors = (m2, other)
        watcher = await connect(m2)  # events are the cluster's: any member's client sees them
        await watcher.subscribe(EVENTS)
        # The emitter (m1) publishes events once it knows someone follows them: its table has
        # the watcher after m2's next report (docs/occupancy.md)
        await _eventually(partial(_count_is, cluster.member(1), EVENTS, 1), "the watcher at m1")
        on_m2, on_victim, only_victim = (
            await connect(m2),
            await connect(victim),
            await connect(victim),
        )
        for client, subject in (
            (on_m2, SHARED),
            (on_victim, SHARED),
            (only_victim, ONLY_VICTIM),
        ):
            assert (await client.subscribe(subject))["type"] == "subscribed"
        for member in cluster.members:  # every member sees the same cluster counts
            shared = await _eventually(partial(_count_is, member, SHARED, 2), SHARED)
            assert shared["members"] == {"m2": 1, f"m{killed}": 1}
            await _eventually(partial(_count_is, member, ONLY_VICTIM, 1), ONLY_VICTIM)
        await _eventually(lambda: _events(watcher, ONLY_VICTIM) == ["occupied"], "occupied")

        victim.kill()  # SIGKILL: its subscribers never unsubscribe
        since_kill = time.monotonic()
        await _eventually(
            lambda: _events(watcher, ONLY_VICTIM) == ["occupied", "vacated"], "vacated after kill"
        )
        print(f"SIGKILL to vacated event: {time.monotonic() - since_kill:.1f} s")
        for member in survivors:
            shared = await _eventually(partial(_count_is, member, SHARED, 1), "one left")
            assert shared["members"] == {"m2": 1}
        assert _events(watcher, SHARED) == ["occupied"]  # m2's subscriber still holds it
        hooked = await _eventually(
            lambda: (
                [e["event"] for e in receiver.events if e["subject"] == ONLY_VICTIM]
                == ["occupied", "vacated"]
            ),
            "the webhook events of the victim-only subject",
        )
        assert hooked
        assert [e["event"] for e in receiver.events if e["subject"] == SHARED] == ["occupied"]
        assert receiver.bad_signatures == 0
    finally:
        cluster.kill_all()
