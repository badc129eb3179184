"""RFC 9457 problem documents: every error of the admin API, whatever raised it."""

from __future__ import annotations

from typing import Annotated

import httpx
import pytest
from fastapi import FastAPI, Query

from pushgrid.admin_api.problems import (
    PROBLEM_MEDIA_TYPE,
    Problem,
    ProblemError,
    install,
    problem_document,
    problem_responses,
    unauthorized,
)


def _app() -> FastAPI:
    app = FastAPI()
    install(app)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    @app.get("/gone")
    def gone() -> None:
        raise ProblemError(502, "member 'x' is down", "member_unreachable", member="x")

    @app.get("/auth")
    def auth() -> None:
        raise unauthorized("no token")

    @app.get("/items")
    def items(limit: Annotated[int, Query(ge=1)] = 1) -> dict[str, int]:
        return {"limit": limit}

    return app


async def _get(path: str, method: str = "GET") -> httpx.Response:
    transport = httpx.ASGITransport(app=_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return await client.request(method, path)


def _check(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body = response.json()
    Problem.model_validate(body)
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"urn:pushgrid:admin:{code}"
    return dict(body)


async def test_problem_error_with_member() -> None:
    body = _check(await _get("/gone"), 502, "member_unreachable")
    assert body["member"] == "x"
    assert body["title"] == "Bad Gateway"
    assert body["detail"] == "member 'x' is down"
    assert body["instance"] == "/gone"


async def test_unauthorized_carries_the_bearer_challenge() -> None:
    response = await _get("/auth")
    _check(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == 'Bearer realm="pushgrid-admin"'


async def test_validation_errors_list_their_reasons() -> None:
    body = _check(await _get("/items?limit=0"), 422, "validation_failed")
    errors = body["errors"]
    assert isinstance(errors, list)
    assert errors[0]["loc"] == ["query", "limit"]
    assert "limit" in str(body["detail"])


async def test_unknown_path_and_method() -> None:
    _check(await _get("/nowhere"), 404, "not_found")
    response = await _get("/items", "DELETE")
    _check(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET"


async def test_unexpected_exception_is_a_500_problem_without_internals() -> None:
    body = _check(await _get("/boom"), 500, "internal")
    assert "secret internals" not in str(body)
    assert "RuntimeError" in str(body["detail"])


def test_document_shape_and_extensions() -> None:
    document = problem_document(409, "busy", "job_running", extensions={"run": 3, "status": 1})
    assert document == {
        "type": "urn:pushgrid:admin:job_running",
        "title": "Conflict",
        "status": 409,  # extensions never override the standard members
        "detail": "busy",
        "instance": None,
        "code": "job_running",
        "run": 3,
    }
    assert problem_document(418, None)["code"] == "error"


@pytest.mark.parametrize("extra", [(), (404, 409), (502, 504)])
def test_openapi_responses_are_problems(extra: tuple[int, ...]) -> None:
    responses = problem_responses(*extra)
    assert set(responses) == {400, 401, 403, 422, 429, 500, *extra}
    for response in responses.values():
        assert list(response["content"]) == [PROBLEM_MEDIA_TYPE]
    assert "WWW-Authenticate" in responses[401]["headers"]
