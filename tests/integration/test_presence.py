"""Presence (issue 25 item 2): which sessions, with their client ids, follow a presence subject,
cluster-wide, through the Python client; join/leave events; a SIGKILLed member's sessions leave."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import jwt as pyjwt
import pytest

from pushgrid.client import Presence, PresenceEvent, PresenceRefused, PushgridClient

from .cluster import Cluster
from .pgtest import AdminHarness, Frame, ServerProcess, WsClient, assert_problem, member_entry
from .test_admin_entitlement import API, OK_ONLY, SECRET, SECRET_HOLDER
from .test_occupancy import _count_is, _eventually

pytestmark = pytest.mark.timeout(240)

ROOM = "/Chat/lobby"  # a presence subject (Occupancy.PresencePatterns = /Chat/*)
ROOM_SECRET = "/secret/room"


def _client(
    member: ServerProcess,
    client_id: str | None = None,
    on_presence: Callable[[PresenceEvent], None] | None = None,
) -> PushgridClient:
    return PushgridClient(
        [f"127.0.0.1:{member.port}"], proxy=None, client_id=client_id, on_presence=on_presence
    )


def _ids(presence: Presence) -> list[tuple[str, str]]:
    return sorted((c.client_id, c.member) for c in presence.clients)


async def test_presence_is_cluster_wide_and_a_killed_members_sessions_leave(
    tmp_path: Path,
) -> None:
    settings: dict[str, Any] = {"Occupancy.PresencePatterns": "/Chat/*"}
    cluster = Cluster(tmp_path, configured=3, mode="Standard", **settings)
    clients: list[PushgridClient] = []
    events: list[PresenceEvent] = []
    try:
        cluster.start()
        m1, m2, m3 = cluster.members
        watcher = _client(m1, on_presence=events.append)
        clients.append(watcher)
        await watcher.connect(timeout=30)
        await watcher.follow_presence()
        # the emitter (m1) publishes once its table counts a follower (docs/occupancy.md)
        await _eventually(partial(_count_is, m1, "/pushgrid/presence", 1), "the watcher at m1")
        ann, bob, eve = _client(m1, "ann"), _client(m2, "bob"), _client(m3, "eve@example.com")
        clients += [ann, bob, eve]
        for client in (ann, bob, eve):
            await client.connect(timeout=30)
            await client.subscribe(ROOM)
        everyone = [("ann", "m1"), ("bob", "m2"), ("eve@example.com", "m3")]
        for member in (m1, m2, m3):  # every member answers the same list
            asker = _client(member)
            clients.append(asker)
            await asker.connect(timeout=30)

            async def listed(asker: PushgridClient = asker) -> bool:
                answer = await asker.presence(ROOM)
                return _ids(answer) == everyone and answer.subscribers == 3

            await _eventually(
                listed, f"the three sessions listed at {member.settings['ServerName']}"
            )
        await _eventually(
            lambda: (
                sorted(e.client_id for e in events if e.event == "join")
                == ["ann", "bob", "eve@example.com"]
            ),
            f"the three joins: {events}",
        )
        with pytest.raises(PresenceRefused) as refused:
            await ann.presence("/Stocks/IBM")  # not a presence subject
        assert refused.value.reason_code == "presence_disabled"

        await bob.unsubscribe(ROOM)  # an orderly leave
        await _eventually(
            lambda: [e.client_id for e in events if e.event == "leave"] == ["bob"], "bob left"
        )
        m3.kill()  # SIGKILL: eve never unsubscribes
        since_kill = time.monotonic()
        await _eventually(
            lambda: (
                [e.client_id for e in events if e.event == "leave"] == ["bob", "eve@example.com"]
            ),
            "eve left with her member",
        )
        print(f"SIGKILL to presence leave event: {time.monotonic() - since_kill:.1f} s")
        (leave,) = [e for e in events if e.client_id == "eve@example.com" and e.event == "leave"]
        assert leave.member == "m3"
        for member in (m1, m2):
            asker = _client(member)
            clients.append(asker)
            await asker.connect(timeout=30)

            async def only_ann(asker: PushgridClient = asker) -> bool:
                # each member notices the death on its own heartbeat clock (within an interval)
                return _ids(await asker.presence(ROOM)) == [("ann", "m1")]

            await _eventually(only_ann, "eve gone from every survivor's list")
    finally:
        for client in clients:
            await client.close()
        cluster.kill_all()


PAGE_SCRIPT = """
const done = arguments[arguments.length - 1];
const url = arguments[0];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const events = [];
  const watcher = new Pushgrid.PushgridClient(url, {onPresence: (e) => events.push(e)});
  await watcher.connect();
  await watcher.followPresence();
  await sleep(1200);  // the emitter counts its follower at its next interval (0.5 s)
  const ann = new Pushgrid.PushgridClient(url, {clientId: "ann"});
  await ann.connect();
  await ann.subscribe("/Chat/lobby");
  let answer = null;
  for (let i = 0; i < 50 && !(answer && answer.clients.length === 1); i++) {
    await sleep(200);
    answer = await watcher.presence("/Chat/lobby");
  }
  let refused = null;
  try { await watcher.presence("/Stocks/IBM"); } catch (e) { refused = e.code; }
  await ann.unsubscribe("/Chat/lobby");
  for (let i = 0; i < 50 && events.length < 2; i++) await sleep(200);
  let badId = null;
  try { new Pushgrid.PushgridClient(url, {clientId: "a b"}); } catch (e) { badId = e.message; }
  await ann.close(); await watcher.close();
  return {answer, refused, badId, events: events.map((e) => [e.event, e.subject, e.clientId])};
})().then(done, (e) => done({error: String(e)}));
"""


def test_the_browser_client_asks_presence_and_gets_join_and_leave(server_factory, browser):
    srv = server_factory(**{"Occupancy.PresencePatterns": "/Chat/*"})
    browser.driver.get(f"{srv.url}/health")  # any page of the server's origin
    browser.js(
        "const s = document.createElement('script'); s.src = '/pushgrid.js';"
        "document.head.appendChild(s);"
    )
    browser.wait_js("return typeof window.Pushgrid === 'object'", "/pushgrid.js loaded")
    browser.driver.set_script_timeout(40)
    result = browser.driver.execute_async_script(PAGE_SCRIPT, f"127.0.0.1:{srv.port}")
    assert "error" not in result, result
    answer = result["answer"]
    assert answer["subscribers"] == 1
    assert [(c["clientId"], c["member"]) for c in answer["clients"]] == [
        ("ann", srv.settings["ServerName"])
    ]
    assert result["refused"] == "presence_disabled"
    assert "clientId" in result["badId"]
    assert result["events"] == [["join", "/Chat/lobby", "ann"], ["leave", "/Chat/lobby", "ann"]]
    assert not browser.console_errors(), browser.console_errors()


async def test_the_token_names_the_client_and_guards_presence_on_the_wire_and_in_the_admin_api(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    """With JWT entitlement the token's `sub` replaces the declared client id; the presence op
    and the admin API's routes answer only for a subject the token may subscribe to; the
    presence route needs the operator role."""
    push = server_factory(
        ServerName="jwt-p",
        Entitlement="jwt",
        EntitlementJwtSecret=SECRET,
        **{"Occupancy.PresencePatterns": "/secret/*"},
    )
    member = await connect(push, SECRET_HOLDER)  # sub: "someone"
    await member.send(
        {"op": "subscribe", "id": 1, "subjects": [{"subject": ROOM_SECRET, "client_id": "liar"}]}
    )
    await member.expect("subscribed", subject=ROOM_SECRET, status="allow")
    outsider = await connect(push, OK_ONLY)
    await outsider.send({"op": "presence", "id": 2, "subject": ROOM_SECRET})
    denied = await outsider.expect("error", id=2)
    assert denied["code"] == "denied"

    async def listed() -> Frame | None:
        await member.send({"op": "presence", "id": 3, "subject": ROOM_SECRET})
        answer = await member.expect("presence", id=3)
        return answer if answer["clients"] else None

    answer = await _eventually(listed, "the member listed")
    assert [c["client_id"] for c in answer["clients"]] == ["someone"]

    admin = AdminHarness(tmp_path / "admin", [member_entry("p", push)])
    params = {"subject": ROOM_SECRET}
    try:
        async with admin.client("viewer") as viewer:
            counts = await viewer.get(
                f"{API}/members/p/occupancy",
                params=params,
                headers={"X-Entitlement-Token": SECRET_HOLDER},
            )
            assert counts.status_code == 200, counts.text
            assert counts.json()["subscribers"] == 1
            assert counts.json()["members"] == {"jwt-p": 1}
            refused = await viewer.get(f"{API}/members/p/presence", params=params)
            assert refused.status_code == 403
        async with admin.client("operator") as operator:
            url = f"{API}/members/p/presence"
            assert_problem(await operator.get(url, params=params), 403, "entitlement_required")
            other = await operator.get(url, params=params, headers={"X-Entitlement-Token": OK_ONLY})
            assert_problem(other, 403, "entitlement_denied")
            granted = await operator.get(
                url, params=params, headers={"X-Entitlement-Token": SECRET_HOLDER}
            )
            assert granted.status_code == 200, granted.text
            body = granted.json()
            assert body["enabled"] is True
            assert [(c["client_id"], c["member"]) for c in body["clients"]] == [
                ("someone", "jwt-p")
            ]
            plain = await operator.get(
                url,
                params={"subject": "/public/room"},
                headers={"X-Entitlement-Token": SECRET_HOLDER},
            )
            assert_problem(plain, 403, "entitlement_denied")
    finally:
        admin.close()


async def test_an_event_stream_declares_its_client_id_for_presence(server_factory) -> None:
    """``GET /events?client_id=`` names the stream's session in presence as a WebSocket
    subscription's ``client_id`` does; a bad or repeated one is a 400 problem."""
    srv = server_factory(**{"Occupancy.PresencePatterns": "/Chat/*"})
    base = f"http://127.0.0.1:{srv.port}/events"
    async with httpx.AsyncClient(timeout=10) as http:
        for bad in ({"client_id": "no spaces"}, {"client_id": ["a", "b"]}):
            refused = await http.get(base, params={"subject": ROOM, **bad})
            assert refused.status_code == 400, refused.text
            assert refused.headers["content-type"].startswith("application/problem+json")
        params = {"subject": ROOM, "client_id": "sse-ann"}
        async with http.stream("GET", base, params=params) as stream:
            assert stream.status_code == 200
            subscribed = asyncio.Event()

            async def read() -> None:  # keep reading: leaving the iterator closes the stream
                async for line in stream.aiter_lines():
                    if '"subscribed"' in line:
                        subscribed.set()

            reader = asyncio.create_task(read())
            await asyncio.wait_for(subscribed.wait(), 10)
            asker = _client(srv)
            await asker.connect()
            try:

                async def listed() -> list[tuple[str, str]]:
                    return _ids(await asker.presence(ROOM))

                # presence follows the occupancy tick (Occupancy.Interval, 0.5 s)
                ids = await _eventually(listed, "the stream's session in presence")
            finally:
                await asker.close()
                reader.cancel()
    assert ids == [("sse-ann", srv.settings["ServerName"])]


def _token_of(sub: str | None) -> str:
    claims: dict[str, Any] = {
        "permissions": {"sub": ["/secret/*"]},
        "exp": int(time.time()) + 3600,
    }
    if sub is not None:
        claims["sub"] = sub
    return pyjwt.encode(claims, SECRET, "HS256")


async def test_with_jwt_a_token_without_sub_cannot_pose_and_a_refresh_renames(
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    """Issue 34 (2.5): a token without `sub` declaring `client_id: "alice"` was listed as alice;
    after a `token` refresh with a new `sub` one session was listed under two identities."""
    push = server_factory(
        ServerName="jwt-q",
        Entitlement="jwt",
        EntitlementJwtSecret=SECRET,
        **{"Occupancy.PresencePatterns": "/secret/*"},
    )
    poser = await connect(push, _token_of(None))
    subjects = [{"subject": ROOM_SECRET, "client_id": "alice"}, {"subject": "/secret/two"}]
    await poser.send({"op": "subscribe", "id": 1, "subjects": subjects})
    await poser.expect("subscribed", subject=ROOM_SECRET, status="allow")
    await poser.expect("subscribed", subject="/secret/two", status="allow")

    async def listed(subject: str, want: list[str]) -> Frame | None:
        await poser.send({"op": "presence", "id": 3, "subject": subject})
        answer = await poser.expect("presence", id=3)
        names = [c["client_id"] for c in answer["clients"]]
        return answer if names == want else None

    await _eventually(partial(listed, ROOM_SECRET, [""]), "listed without an id, not as alice")
    await poser.send({"op": "token", "id": 4, "token": _token_of("bob")})
    await poser.expect("token_result", id=4, result="ok")
    await _eventually(partial(listed, ROOM_SECRET, ["bob"]), "the refresh renames the session")
    await _eventually(partial(listed, "/secret/two", ["bob"]), "on every subject")


async def test_presence_and_occupancy_events_reach_only_tokens_entitled_to_their_subjects(
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    """Issue 34 (2.4): a token refused `/Chat/secret/*` still received `join
    /Chat/secret/room2 carol` on `/pushgrid/presence` and the subject on `/pushgrid/occupancy`."""
    push = server_factory(
        ServerName="jwt-e",
        Entitlement="jwt",
        EntitlementJwtSecret=SECRET,
        **{"Occupancy.PresencePatterns": "/Chat/*"},
    )

    def token(sub: str, patterns: list[str]) -> str:
        claims = {"sub": sub, "permissions": {"sub": patterns}, "exp": int(time.time()) + 3600}
        return pyjwt.encode(claims, SECRET, "HS256")

    meta = ["/pushgrid/presence", "/pushgrid/occupancy"]
    outsider = await connect(push, token("eve", ["/Chat/public/*", "/pushgrid/*"]))
    items = [{"subject": subject} for subject in meta]
    await outsider.send({"op": "subscribe", "id": 1, "subjects": items})
    for subject in meta:
        refused = await outsider.expect("subscribed", subject=subject)
        assert refused["status"] == "deny", refused
        assert "/Chat/*" in refused["reason"] or "*" in refused["reason"]
    insider = await connect(push, token("dan", ["/Chat/*", "/pushgrid/presence"]))
    await insider.send({"op": "subscribe", "id": 2, "subjects": items})
    await insider.expect("subscribed", subject=meta[0], status="allow")
    await insider.expect("subscribed", subject=meta[1], status="deny")
    carol = await connect(push, token("carol", ["/Chat/*"]))
    await carol.send({"op": "subscribe", "id": 3, "subjects": [{"subject": "/Chat/secret/room2"}]})
    await carol.expect("subscribed", subject="/Chat/secret/room2", status="allow")
    join = await insider.expect("message", subject=meta[0], kind="update")
    assert (join["fields"]["event"], join["fields"]["client_id"]) == ("join", "carol")
    # a refresh to a narrower token revokes the follow, as for any subject
    await insider.send({"op": "token", "id": 4, "token": token("dan", ["/pushgrid/*"])})
    result = await insider.expect("token_result", id=4, result="ok")
    assert result["revoked"] == [meta[0]]
