"""The console and the admin API agree on every answer they share (ADR 059).

The console's provider (``console/http_provider.py``) talks to a real admin API over a real
member; every JSON answer it reads is recorded, and what the console decoded must dump back to
exactly that JSON: a field the console's type drops, renames or re-types fails here. And each
route answers with the very type the console decodes it with (one definition, not two).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from pydantic import BaseModel
from websockets.sync.client import connect

from pushgrid.console.http_provider import HttpProvider
from pushgrid.metrics.sqlstore import start_run, write_results
from pushgrid.ops.api.audit import AuditOut
from pushgrid.ops.api.cluster import ClusterOut
from pushgrid.ops.api.delivery_windows import DeliveryWindowList
from pushgrid.ops.api.history import HistoryOut
from pushgrid.ops.api.jobs import JobRunOut
from pushgrid.ops.api.live import LiveStats, OverviewOut
from pushgrid.ops.api.me import Me
from pushgrid.ops.api.members import MemberList
from pushgrid.ops.api.sessions import SessionPage
from pushgrid.ops.api.statistics import WatchedWindowStatList, WindowStatList
from pushgrid.ops.api.subjects import PresenceOut, PublishOut, SubjectInfo
from pushgrid.ops.api.trends import TrendSeries
from pushgrid.ops.statistics import TrendQuery
from pushgrid.spark_stats.synthetic_results import synthetic_delivery, synthetic_result

from .pgtest import AdminHarness, ServerProcess, free_port, member_entry, serve_in_thread
from .test_admin_roles import api_routes

AS_OF = 1_795_363_200

#: the admin API's route -> the type the console decodes its answer (or each of its items) with
SHARED: Mapping[tuple[str, str], type[BaseModel]] = {
    ("GET", "/api/v1/me"): Me,
    ("GET", "/api/v1/stats/history"): HistoryOut,
    ("GET", "/api/v1/members/{name}/subjects"): SubjectInfo,
    ("POST", "/api/v1/members/{name}/publish"): PublishOut,
    ("GET", "/api/v1/members/{name}/presence"): PresenceOut,
    ("GET", "/api/v1/jobs/{run_id}"): JobRunOut,
    ("POST", "/api/v1/jobs"): JobRunOut,
    ("GET", "/api/v1/cluster"): ClusterOut,
    ("GET", "/api/v1/stats/trend"): TrendSeries,
    ("GET", "/api/v1/stats/delivery"): DeliveryWindowList,
    ("GET", "/api/v1/sessions"): SessionPage,
    ("GET", "/api/v1/members/{name}/sessions"): SessionPage,
    ("GET", "/api/v1/members"): MemberList,
    ("GET", "/api/v1/stats/live"): LiveStats,
    ("GET", "/api/v1/cluster/overview"): OverviewOut,
    ("GET", "/api/v1/stats/windows"): WindowStatList,
    ("GET", "/api/v1/watched-subjects/statistics"): WatchedWindowStatList,
}
PAGES: Mapping[tuple[str, str], type[BaseModel]] = {
    ("GET", "/api/v1/jobs"): JobRunOut,
    ("GET", "/api/v1/audit"): AuditOut,
}


class RecordingProvider(HttpProvider):
    """The console's provider, keeping every JSON answer it read (path -> the last one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answers: dict[str, Any] = {}
        self.member: ServerProcess

    def _request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        answer = super()._request(method, path, *args, **kwargs)
        self.answers[path] = answer
        return answer


@pytest.fixture(scope="module")
def console(
    module_server_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RecordingProvider]:
    member: ServerProcess = module_server_factory(
        ServerName="push-1", **{"Occupancy.PresencePatterns": "/Chat/*"}
    )
    harness = AdminHarness(tmp_path_factory.mktemp("answers"), [member_entry("push-1", member)])
    with harness.session_factory() as db:  # what the pipeline wrote: trend points to read
        run = start_run(db, master="local[2]", as_of=AS_OF)
        result = synthetic_result(AS_OF, nodes=("push-1",), trend_points=4)
        result.delivery_stats = synthetic_delivery(AS_OF, nodes=("push-1",))
        write_results(db, run.id, result)
    port = free_port()
    with serve_in_thread(harness.app, port):
        provider = RecordingProvider(f"http://127.0.0.1:{port}", harness.tokens["admin"])
        provider.member = member
        yield provider
        provider.close()
    harness.close()


@contextmanager
def subscriber(member: ServerProcess, subject: str) -> Iterator[None]:
    """A WebSocket client subscribed to ``subject`` on ``member`` while the block runs."""
    with connect(member.ws_url) as ws:
        ws.recv(timeout=10)  # the welcome
        ws.send(json.dumps({"op": "subscribe", "id": 1, "subjects": [{"subject": subject}]}))
        while json.loads(ws.recv(timeout=10)).get("type") != "subscribed":
            pass
        yield


def dumped(value: BaseModel) -> Any:
    return value.model_dump(mode="json")


def test_every_shared_route_answers_with_the_type_the_console_decodes(tmp_path: Path) -> None:
    harness = AdminHarness(tmp_path, [])
    routes = api_routes(harness.app)
    models = {(method, path): route.response_model for method, path, route in routes}
    harness.close()
    for key, model in SHARED.items():
        assert models[key] is model, key
    overview = models["GET", "/api/v1/cluster/overview"]
    assert overview.model_fields["cluster"].annotation is ClusterOut
    for key, model in PAGES.items():
        items = models[key].model_fields["items"].annotation
        assert (get_origin(items), get_args(items)) == (list, (model,)), key


def test_what_the_console_decodes_dumps_back_to_the_admin_api_s_json(
    console: RecordingProvider,
) -> None:
    assert dumped(console.whoami()) == console.answers["/me"]
    published = console.publish("/Chat/answers", "hello", {"k": "v"})
    assert dumped(published) == console.answers["/members/push-1/publish"]
    seen = console.subject("/Chat/answers")
    answer = console.answers["/members/push-1/subjects"]
    assert seen.snapshot is not None, "the publish is retained"
    assert dumped(seen.snapshot) == answer["snapshot"]
    assert seen.subscribers == {"push-1": answer["subscribers"]}
    presence = console.presence("/Chat/answers")
    assert dumped(presence) == console.answers["/members/push-1/presence"]
    trend = console.trend(TrendQuery(scope="cluster", indicator="connected_users", window="1h"))
    assert trend, "the trend points the pipeline wrote"
    assert [dumped(point) for point in trend] == console.answers["/stats/trend"]["points"]
    delivery = console.delivery_windows()
    assert delivery.items, "the delivery windows the pipeline wrote"
    assert dumped(delivery) == console.answers["/stats/delivery"]
    overview = console.live()
    answer = console.answers["/cluster/overview"]
    assert overview.topology is not None
    assert dumped(overview.topology) == answer["cluster"]
    assert [dumped(m) for m in overview.members] == answer["members"]["items"]
    assert [m.name for m in overview.members] == ["push-1"]
    live = answer["live"]["members"][0]
    scope = overview.scopes["push-1"]
    assert [dumped(i) for i in scope.indicators.values()] == live["indicators"]
    sampled = datetime.fromisoformat(live["sample_time"].replace("Z", "+00:00"))
    assert scope.ts == int(sampled.timestamp())
    assert [dumped(m) for m in console.members()] == console.answers["/members"]["items"]
    windows = console.all_window_stats()
    stored = console.answers["/stats/windows"]["items"]
    assert stored, "the windows the pipeline wrote"
    assert [dumped(row) for scope_stats in windows for row in scope_stats.rows] == stored
    history = console.history()
    assert dumped(history) == console.answers["/stats/history"]
    started = console.start_job()
    assert dumped(started) == console.answers["/jobs"]
    runs = console.jobs()
    assert runs, "the run just started is listed"
    assert [dumped(run) for run in runs] == console.answers["/jobs"]["items"]
    with subscriber(console.member, "/Chat/answers"):
        page = console.sessions("/Chat/answers")
    assert [session.subjects for session in page.items] == [["/Chat/answers"]]
    assert dumped(page) == console.answers["/sessions"]
    audit = console.audit()
    assert audit, "the publish and the job are audited"
    assert [dumped(row) for row in audit] == console.answers["/audit"]["items"]
    assert all(type(row) is AuditOut for row in audit)
