"""The admin API respects the members' entitlement and its own roles (issue 22 item 4).

Before: a viewer read the content of a JWT-only subject (`GET /members/a/subjects?subject=`), an
operator read another client's entitled frames in a session's detail, and any operator read
another operator's trace. Now subject content and session frames of a member with entitlement
need the caller's entitlement token (`X-Entitlement-Token`, the member decides), and a trace
belongs to the token that opened it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jwt
import pytest

from .pgtest import (
    AdminHarness,
    ServerProcess,
    WsClient,
    assert_problem,
    free_port,
    member_entry,
)

API = "/api/v1"
SECRET = "admin-entitlement-secret-0123456789abcdef"
SECRET_CONTENT = "only-for-secret-holders"


def entitlement_token(subscribe: list[str], publish: list[str] | None = None) -> str:
    claims = {
        "sub": "someone",
        "permissions": {"sub": subscribe, "pub": publish or []},
        "exp": int(time.time()) + 3600,
    }
    return jwt.encode(claims, SECRET, "HS256")


SECRET_HOLDER = entitlement_token(["/secret/*"], ["/secret/*"])
OK_ONLY = entitlement_token(["/ok/*"])


def entitled_member(server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return server_factory(ServerName="jwt-a", Entitlement="jwt", EntitlementJwtSecret=SECRET)


async def test_subject_content_needs_a_granting_entitlement_token(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    push = entitled_member(server_factory)
    publisher = await connect(push, SECRET_HOLDER)
    await publisher.publish_ok("/secret/a", SECRET_CONTENT)
    admin = AdminHarness(tmp_path / "admin", [member_entry("a", push)])
    url = f"{API}/members/a/subjects"
    try:
        async with admin.client("viewer") as api:
            missing = await api.get(url, params={"subject": "/secret/a"})
            assert SECRET_CONTENT not in missing.text
            assert_problem(missing, 403, "entitlement_required")
            other = await api.get(
                url, params={"subject": "/secret/a"}, headers={"X-Entitlement-Token": OK_ONLY}
            )
            assert SECRET_CONTENT not in other.text
            assert_problem(other, 403, "entitlement_denied")
            granted = await api.get(
                url,
                params={"subject": "/secret/a"},
                headers={"X-Entitlement-Token": SECRET_HOLDER},
            )
            assert granted.status_code == 200, granted.text
            assert granted.json()["snapshot"]["content"] == SECRET_CONTENT
            forged = jwt.encode({"permissions": {"sub": [">"]}}, "not-the-secret", "HS256")
            assert_problem(
                await api.get(
                    url, params={"subject": "/secret/a"}, headers={"X-Entitlement-Token": forged}
                ),
                403,
                "entitlement_denied",
            )
    finally:
        admin.close()


async def test_a_member_without_entitlement_shows_subjects_to_viewers(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    push = server_factory(ServerName="open")
    await (await connect(push)).publish_ok("/open/a", "public")
    admin = AdminHarness(tmp_path / "admin", [member_entry("open", push)])
    try:
        async with admin.client("viewer") as api:
            answer = await api.get(f"{API}/members/open/subjects", params={"subject": "/open/a"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["snapshot"]["content"] == "public"
    finally:
        admin.close()


@contextmanager
def admin_on_a_port(admin: AdminHarness) -> Iterator[str]:
    """The harness's admin API under uvicorn on a free loopback port (the console's provider
    is a plain HTTP client): its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(admin.app, host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="admin-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive(), "the admin API did not start"
        assert time.monotonic() < deadline, "the admin API did not start in time"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


async def test_the_console_passes_the_operators_entitlement_token(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    """The console's Subjects page (and the trace page's session detail) send the token typed
    in its entitlement field; without one an entitled member refuses the subject (403)."""
    from pushgrid.console.http_provider import HttpProvider
    from pushgrid.console.provider import ProviderError

    push = entitled_member(server_factory)
    publisher = await connect(push, SECRET_HOLDER)
    await publisher.publish_ok("/secret/c", SECRET_CONTENT)
    subscriber = await connect(push, SECRET_HOLDER)
    await subscriber.subscribe("/secret/c")
    admin = AdminHarness(tmp_path / "admin", [member_entry("a", push)])
    try:
        with admin_on_a_port(admin) as url, HttpProvider(url, admin.tokens["operator"]) as console:
            with pytest.raises(ProviderError) as refused:
                await asyncio.to_thread(console.subject, "/secret/c")
            assert "Forbidden" in str(refused.value)
            assert "X-Entitlement-Token" in str(refused.value)
            assert SECRET_CONTENT not in str(refused.value)
            info = await asyncio.to_thread(console.subject, "/secret/c", SECRET_HOLDER)
            assert info.snapshot is not None
            assert info.snapshot.content == SECRET_CONTENT
            session = str(subscriber.welcome["session"])
            await asyncio.to_thread(console.session_detail, "a", session)  # starts recording
            await publisher.publish_ok("/secret/c", SECRET_CONTENT + "-2")
            await subscriber.messages(2, "/secret/c")
            hidden = await asyncio.to_thread(console.session_detail, "a", session)
            assert SECRET_CONTENT not in str(hidden)
            shown = await asyncio.to_thread(console.session_detail, "a", session, SECRET_HOLDER)
            assert SECRET_CONTENT + "-2" in str(shown)
    finally:
        admin.close()


def _texts(detail: dict[str, Any]) -> list[str | None]:
    return [frame["text"] for frame in detail["last_frames"]]


async def test_session_frames_of_entitled_subjects_need_the_callers_token(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    push = entitled_member(server_factory)
    subscriber = await connect(push, SECRET_HOLDER)
    await subscriber.subscribe("/secret/b")
    publisher = await connect(push, SECRET_HOLDER)
    admin = AdminHarness(tmp_path / "admin", [member_entry("a", push)])
    try:
        async with admin.client("operator") as api:
            path = f"{API}/members/a/sessions/{subscriber.welcome['session']}"
            assert (await api.get(path)).status_code == 200  # from now on, frames are recorded
            await publisher.publish_ok("/secret/b", SECRET_CONTENT)
            await subscriber.messages(1, "/secret/b")
            for headers in ({}, {"X-Entitlement-Token": OK_ONLY}):
                detail = await api.get(path, headers=headers)
                assert detail.status_code == 200, detail.text
                assert SECRET_CONTENT not in detail.text
                redacted = [f for f in detail.json()["last_frames"] if f.get("redacted")]
                assert redacted, detail.json()
                assert all(f["text"] is None for f in redacted)
            holder = await api.get(path, headers={"X-Entitlement-Token": SECRET_HOLDER})
            assert any(SECRET_CONTENT in (text or "") for text in _texts(holder.json()))
    finally:
        admin.close()


async def test_a_trace_belongs_to_the_token_that_opened_it(
    tmp_path: Path, server_factory: Callable[..., ServerProcess]
) -> None:
    push = server_factory(ServerName="trace-owner")
    admin = AdminHarness(tmp_path / "admin", [member_entry("t", push)])
    try:
        async with admin.client("admin") as root:
            created = await root.post(f"{API}/tokens", json={"name": "op-2", "role": "operator"})
            other = {"authorization": f"Bearer {created.json()['token']}"}
        async with admin.client("operator") as api:
            opened = await api.post(f"{API}/members/t/traces", json={"subject": "/trace/own"})
            assert opened.status_code == 201, opened.text
            path = f"{API}/traces/{opened.json()['id']}"
            assert_problem(await api.get(path, headers=other), 404)
            assert_problem(await api.delete(path, headers=other), 404)
            assert_problem(await api.get(path, headers=admin.headers("admin")), 404)
            assert (await api.get(path)).status_code == 200
            assert (await api.delete(path)).status_code == 204
    finally:
        await admin.app.state.traces.close()
        admin.close()
