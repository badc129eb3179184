"""A member that hangs (SIGSTOP) while the admin API serves (issue 34, item 4 rows 1 and 3).

Real ``pushgrid server`` processes, the admin API under uvicorn with its background tasks
(member watch, history, alert runner). The member timeout is set long (12 s) so that a route
that still waits for the hung member cannot answer within the client's bound (6 s): before the
fix, ``GET /cluster`` waited 2 x the timeout (discovery, then the views) for the whole pause.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from .pgtest import AdminHarness, ServerProcess, free_port, member_entry, serve_in_thread

MEMBER_TIMEOUT = 12.0  # what a route that waits for the hung member takes at least
BOUND = 6.0  # each request of the test must answer within this (half the member timeout)
WAIT = 30.0


@contextmanager
def admin_api(
    tmp_path: Any, pair: tuple[ServerProcess, ServerProcess], **options: Any
) -> Iterator[httpx.Client]:
    """The admin API over ``pair`` under uvicorn (lifespan on: its tasks run), and a viewer's
    client of it whose every request must answer within :data:`BOUND`."""
    a, b = pair
    admin = AdminHarness(
        tmp_path / "admin", [member_entry("hung-a", a), member_entry("hung-b", b)], **options
    )
    port = free_port()
    try:
        with (
            serve_in_thread(admin.app, port),
            httpx.Client(
                base_url=f"http://127.0.0.1:{port}/api/v1",
                headers=admin.headers("viewer"),
                timeout=BOUND,
                trust_env=False,
            ) as http,
        ):
            yield http
    finally:
        admin.close()


def wait_for(ask: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while True:
        found = ask()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what}: not within {WAIT} s"
        time.sleep(0.2)


@pytest.fixture
def pair(server_factory: Callable[..., ServerProcess]) -> tuple[ServerProcess, ServerProcess]:
    return (
        server_factory(ServerName="hung-a", MetaSubjectInterval=0),
        server_factory(ServerName="hung-b", MetaSubjectInterval=0),
    )


def test_a_hung_member_is_not_answering_and_every_route_still_answers(
    tmp_path: Any, pair: tuple[ServerProcess, ServerProcess]
) -> None:
    b = pair[1]
    assert b.proc is not None
    with admin_api(tmp_path, pair, member_timeout=MEMBER_TIMEOUT) as http:

        def members() -> dict[str, dict[str, Any]]:
            answer = http.get("/members")
            assert answer.status_code == 200, answer.text
            return {item["name"]: item for item in answer.json()["items"]}

        assert members()["hung-b"]["reachable"] is True
        assert members()["hung-b"]["not_answering_seconds"] is None
        # the history task samples every member once a second: the pause starts after hung-b's
        # first sample (on a loaded machine the first round can come seconds after the start)
        wait_for(lambda: history_seconds(http, "hung-b"), "a first history sample of hung-b")
        b.proc.send_signal(signal.SIGSTOP)
        try:
            silent = wait_for(
                lambda: members()["hung-b"]["not_answering_seconds"] is not None,
                "hung-b not answering",
            )
            assert silent
            listed = wait_for(
                lambda: (m := members()["hung-b"])["not_answering_seconds"] >= 2 and m,
                "the silence counted in seconds",
            )
            assert listed["reachable"] is False
            assert "not answering for" in listed["error"]
            assert members()["hung-a"]["reachable"] is True  # the other one is read
            cluster = http.get("/cluster")
            assert cluster.status_code == 200, cluster.text
            body = cluster.json()
            assert body["health"] == "degraded"
            texts = [r["text"] for r in body["reasons"] if r["member"] == "hung-b"]
            assert len(texts) == 1, body["reasons"]
            assert texts[0].startswith("member hung-b is not answering for ")
            live = http.get("/stats/live")
            assert live.status_code == 200, live.text
            by_member = {m["member"]: m for m in live.json()["members"]}
            assert by_member["hung-a"]["reachable"] is True
            assert by_member["hung-b"]["reachable"] is False
            assert http.get("/sessions").status_code == 200
            assert_one_state(http.get("/cluster/overview"))
            # the cluster's per-second sums stop at the hung member's last sample: its
            # clients are still connected, a sum without them would draw a drop (4.5)
            history = http.get("/stats/history").json()
            (hung,) = [m for m in history["members"] if m["scope"] == "hung-b"]
            assert hung["seconds"], "hung-b was sampled before it stopped"
            assert history["cluster"]["seconds"][-1] <= hung["seconds"][-1]
        finally:
            b.proc.send_signal(signal.SIGCONT)
        back = wait_for(
            lambda: (m := members()["hung-b"])["reachable"] and m, "hung-b answering again"
        )
        assert back["not_answering_seconds"] is None
        assert http.get("/cluster").json()["health"] == "ok"


def history_seconds(http: httpx.Client, member: str) -> list[Any]:
    """The seconds ``GET /stats/history`` holds for ``member`` (empty before its first sample)."""
    answer = http.get("/stats/history")
    assert answer.status_code == 200, answer.text
    found = [m["seconds"] for m in answer.json()["members"] if m["scope"] == member]
    return found[0] if found else []


def assert_one_state(answer: httpx.Response) -> dict[str, Any]:
    """One refresh of the Overview (``GET /cluster/overview``) tells one story: a member listed
    unreachable is down in the cluster's health, which is then not ``ok`` (issue 34, 4.4)."""
    assert answer.status_code == 200, answer.text
    body = answer.json()
    down = {m["name"] for m in body["members"]["items"] if not m["reachable"]}
    reasons = {r["member"] for r in body["cluster"]["reasons"] if r["code"] == "member_down"}
    assert down <= reasons, (down, body["cluster"]["reasons"])
    assert (body["cluster"]["health"] == "ok") == (not down and not reasons), body["cluster"]
    live = {m["member"]: m["reachable"] for m in body["live"]["members"]}
    assert set(live) == {m["name"] for m in body["members"]["items"]}
    return body


def test_one_refresh_tells_one_state_after_a_kill(
    tmp_path: Any, pair: tuple[ServerProcess, ServerProcess]
) -> None:
    b = pair[1]
    with admin_api(tmp_path, pair) as http:
        assert assert_one_state(http.get("/cluster/overview"))["cluster"]["health"] == "ok"
        b.kill()
        body = wait_for(
            lambda: (
                (o := assert_one_state(http.get("/cluster/overview")))["cluster"]["reasons"] and o
            ),
            "hung-b down",
        )
        assert body["cluster"]["health"] == "degraded"
        assert body["members"]["unreachable"] == 1
        for _ in range(10):  # every refresh after it agrees with itself
            assert_one_state(http.get("/cluster/overview"))
