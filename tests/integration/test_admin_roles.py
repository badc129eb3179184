"""The role matrix of the admin API, proven on the whole route table.

The test walks the application's routes (not a hand-written list): every ``/api/v1`` route must
be a ``GuardedRoute`` with exactly one ``RoleGuard``, its role must be the one the table below
gives (viewer reads; operator also publishes, disconnects and triggers runs; admin also manages
members and tokens and reads the audit log), and a real request proves it: anonymous -> 401 with
``WWW-Authenticate: Bearer``, a lower role -> 403, the role and those above -> neither. Requests
that would change something carry an invalid body or an unknown id, so nothing is changed.
A new route without a role, or with a role not in the table, fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from pushgrid.admin_api.deps import GuardedRoute, RoleGuard, route_guards
from pushgrid.admin_api.security import Role

from .pgtest import ADMIN_ROLES, AdminHarness, assert_problem

API = "/api/v1"

EXPECTED: dict[tuple[str, str], Role] = {
    ("GET", "/api/v1/me"): Role.VIEWER,
    ("GET", "/api/v1/members"): Role.VIEWER,
    ("GET", "/api/v1/member-names"): Role.VIEWER,
    ("POST", "/api/v1/members"): Role.ADMIN,
    ("GET", "/api/v1/members/{name}"): Role.VIEWER,
    ("DELETE", "/api/v1/members/{name}"): Role.ADMIN,
    ("GET", "/api/v1/cluster"): Role.VIEWER,
    ("GET", "/api/v1/cluster/overview"): Role.VIEWER,
    ("GET", "/api/v1/stats/live"): Role.VIEWER,
    ("GET", "/api/v1/stats/live/{name}"): Role.VIEWER,
    ("GET", "/api/v1/stats/history"): Role.VIEWER,
    ("GET", "/api/v1/stats/windows"): Role.VIEWER,
    ("GET", "/api/v1/stats/trend"): Role.VIEWER,
    ("GET", "/api/v1/stats/delivery"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/subjects"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/occupancy"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/presence"): Role.OPERATOR,
    ("POST", "/api/v1/members/{name}/publish"): Role.OPERATOR,
    ("GET", "/api/v1/sessions"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/sessions"): Role.VIEWER,
    ("DELETE", "/api/v1/members/{name}/sessions/{session_id}"): Role.OPERATOR,
    ("GET", "/api/v1/slow-consumers"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/slow-consumers"): Role.VIEWER,
    ("POST", "/api/v1/member-traces"): Role.OPERATOR,
    ("GET", "/api/v1/member-traces/{trace_id}"): Role.OPERATOR,
    ("GET", "/api/v1/member-traces/{trace_id}/events.jsonl"): Role.OPERATOR,
    ("DELETE", "/api/v1/member-traces/{trace_id}"): Role.OPERATOR,
    ("GET", "/api/v1/jobs"): Role.VIEWER,
    ("GET", "/api/v1/jobs/{run_id}"): Role.VIEWER,
    ("POST", "/api/v1/jobs"): Role.OPERATOR,
    ("GET", "/api/v1/audit"): Role.ADMIN,
    ("GET", "/api/v1/tokens"): Role.ADMIN,
    ("POST", "/api/v1/tokens"): Role.ADMIN,
    ("DELETE", "/api/v1/tokens/{token_id}"): Role.ADMIN,
    ("GET", "/api/v1/hot-subjects"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/hot-subjects"): Role.VIEWER,
    ("GET", "/api/v1/alerts"): Role.VIEWER,
    ("GET", "/api/v1/alerts/history"): Role.VIEWER,
    ("GET", "/api/v1/alerts/rules"): Role.VIEWER,
    ("GET", "/api/v1/alerts/rules/export"): Role.VIEWER,
    ("POST", "/api/v1/alerts/rules"): Role.OPERATOR,
    ("PUT", "/api/v1/alerts/rules/{rule_id}"): Role.OPERATOR,
    ("PATCH", "/api/v1/alerts/rules/{rule_id}"): Role.OPERATOR,
    ("DELETE", "/api/v1/alerts/rules/{rule_id}"): Role.OPERATOR,
    ("GET", "/api/v1/alerts/silences"): Role.VIEWER,
    ("POST", "/api/v1/alerts/silences"): Role.OPERATOR,
    ("DELETE", "/api/v1/alerts/silences/{silence_id}"): Role.OPERATOR,
    ("POST", "/api/v1/alerts/acknowledgements"): Role.OPERATOR,
    ("POST", "/api/v1/members/{name}/traces"): Role.OPERATOR,
    ("GET", "/api/v1/traces/{trace_id}"): Role.OPERATOR,
    ("DELETE", "/api/v1/traces/{trace_id}"): Role.OPERATOR,
    ("GET", "/api/v1/members/{name}/sessions/{session_id}"): Role.OPERATOR,
    ("GET", "/api/v1/watched-subjects"): Role.VIEWER,
    ("GET", "/api/v1/delivery/latency"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/delivery/latency"): Role.VIEWER,
    ("GET", "/api/v1/watched-subjects/statistics"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/watched-subjects"): Role.VIEWER,
    ("POST", "/api/v1/watched-subjects"): Role.OPERATOR,
    ("DELETE", "/api/v1/watched-subjects"): Role.OPERATOR,
    ("GET", "/api/v1/users"): Role.ADMIN,
    ("POST", "/api/v1/users"): Role.ADMIN,
    ("PUT", "/api/v1/users/{name}/password"): Role.ADMIN,
    ("DELETE", "/api/v1/users/{name}"): Role.ADMIN,
    ("GET", "/api/v1/delivery/canaries"): Role.VIEWER,
    ("GET", "/api/v1/slos"): Role.VIEWER,
    ("GET", "/api/v1/slos/{objective_id}"): Role.VIEWER,
    ("GET", "/api/v1/slos/{objective_id}/history"): Role.VIEWER,
    ("POST", "/api/v1/slos"): Role.OPERATOR,
    ("PATCH", "/api/v1/slos/{objective_id}"): Role.OPERATOR,
    ("DELETE", "/api/v1/slos/{objective_id}"): Role.OPERATOR,
    ("GET", "/api/v1/delivery/accounting"): Role.VIEWER,
    ("GET", "/api/v1/slow-consumers/offenders"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/delivery/accounting"): Role.VIEWER,
    ("GET", "/api/v1/subjects"): Role.VIEWER,
    ("GET", "/api/v1/members/{name}/subjects/history"): Role.VIEWER,
    ("DELETE", "/api/v1/subjects/snapshot"): Role.OPERATOR,
    ("DELETE", "/api/v1/members/{name}/sessions/{session_id}/subjects"): Role.OPERATOR,
}
#: the sign-in routes (ADR 052): public, how a browser gets in (logout checks its own session)
SIGN_IN = {
    ("POST", "/api/v1/auth/login"),
    ("POST", "/api/v1/auth/logout"),
    ("GET", "/api/v1/auth/methods"),
    ("GET", "/api/v1/auth/oidc/start"),
    ("GET", "/api/v1/auth/oidc/callback"),
}
PUBLIC = {"/api/v1/openapi.json", "/api/docs", "/api/docs/assets/{name}", "/metrics"}


def api_routes(app: FastAPI) -> Iterator[tuple[str, str, APIRoute]]:
    """(method, full path, route) for every API route of ``app``, included routers too."""
    try:
        from fastapi.routing import iter_route_contexts  # FastAPI >= 0.16x: included routers
    except ImportError:  # older FastAPI: app.routes is flat
        for route in app.routes:
            if isinstance(route, APIRoute):
                for method in sorted(route.methods or ()):
                    yield method, route.path, route
        return
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            assert context.path is not None
            for method in sorted(context.methods or ()):
                yield method, context.path, route


def other_routes(app: FastAPI) -> set[str]:
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:
        return {getattr(r, "path", "") for r in app.routes if not isinstance(r, APIRoute)}
    return {
        context.path or ""
        for context in iter_route_contexts(app.routes)
        if not isinstance(context.original_route, APIRoute)
    }


@pytest.fixture
def harness(tmp_path) -> Iterator[AdminHarness]:
    admin = AdminHarness(tmp_path / "roles", [])
    yield admin
    admin.close()


def test_every_route_declares_exactly_the_documented_role(harness):
    table: dict[tuple[str, str], Role] = {}
    public: set[tuple[str, str]] = set()
    for method, path, route in api_routes(harness.app):
        assert path.startswith(API + "/"), path
        if path.startswith(API + "/auth/"):
            assert not route_guards(route.dependant), f"{method} {path} is a sign-in route"
            public.add((method, path))
            continue
        assert isinstance(route, GuardedRoute), f"{method} {path} is not a GuardedRoute"
        guards = route_guards(route.dependant)
        assert len(guards) == 1, f"{method} {path} has {len(guards)} role dependencies"
        assert isinstance(guards[0], RoleGuard)
        table[(method, path)] = guards[0].role
    assert table == EXPECTED
    assert public == SIGN_IN
    # nothing else is served but the (public, data-free) API documentation
    assert other_routes(harness.app) == PUBLIC


def test_openapi_documents_the_security_of_every_route(harness):
    schema = harness.app.openapi()
    assert schema["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"
    for (method, path), _role in EXPECTED.items():
        operation = schema["paths"][path][method.lower()]
        assert operation["security"] == [{"BearerToken": []}], (method, path)
        for status in ("401", "403", "422", "500"):
            content = operation["responses"][status]["content"]
            assert list(content) == ["application/problem+json"], (method, path, status)
        assert "WWW-Authenticate" in operation["responses"]["401"]["headers"]


def _request_for(method: str, path: str) -> dict[str, Any]:
    """A request that changes nothing: unknown ids in the path, an invalid body."""
    url = re.sub(r"\{run_id\}", "999999", path)
    url = re.sub(r"\{[^}]+\}", "no-such-thing", url)
    request: dict[str, Any] = {"method": method, "url": url}
    if method in ("POST", "PUT", "PATCH"):
        request["json"] = ["not", "a", "valid", "body"]
    return request


async def test_each_role_gets_exactly_what_it_should(harness):
    checked = 0
    for (method, path), required in EXPECTED.items():
        request = _request_for(method, path)
        async with harness.client(None) as anonymous:
            response = await anonymous.request(**request)
        assert_problem(response, 401, "unauthorized")
        assert response.headers["www-authenticate"].startswith("Bearer"), (method, path)
        # a new forged token per route, each from an address of its own: one token refused
        # again and again is throttled (429), and so are many unknown tokens from one address
        # (issue 34 item 2 row 11)
        forged_token = f"Bearer pgt_{checked:08x}forged"
        address = f"127.0.3.{checked // len(ADMIN_ROLES) % 250 + 1}"
        async with harness.client(
            None, address=address, headers={"authorization": forged_token}
        ) as forged:
            assert_problem(await forged.request(**request), 401)
        for name in ADMIN_ROLES:
            role = Role(name)
            async with harness.client(name) as api:
                response = await api.request(**request)
            if role.allows(required):
                assert response.status_code not in (401, 403), (
                    method,
                    path,
                    name,
                    response.status_code,
                    response.text,
                )
                assert response.status_code < 500, (method, path, name, response.text)
            else:
                problem = assert_problem(response, 403, "forbidden")
                assert required.value in problem["detail"], problem
            checked += 1
    assert checked == len(EXPECTED) * len(ADMIN_ROLES)
    # every one of those mutating requests is in the audit log, with its outcome
    async with harness.client("admin") as api:
        audit = (await api.get(f"{API}/audit", params={"limit": 1000})).json()
    mutating = [key for key in EXPECTED if key[0] != "GET"]
    assert audit["total"] == len(mutating) * (2 + len(ADMIN_ROLES))
