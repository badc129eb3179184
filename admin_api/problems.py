"""RFC 9457 problem details: every error of the admin API is ``application/problem+json``.

A problem has ``type`` (``urn:pushgrid:admin:<code>``), ``title``, ``status``, ``detail``,
``instance`` (the request path) and ``code`` (the machine-readable code, as the push server's own
HTTP errors have it), plus extension members where useful: ``member`` for errors of one member,
``errors`` for validation failures.

Raise :class:`ProblemError` anywhere (routes, services, dependencies); :func:`install` turns it,
FastAPI's validation errors, Starlette's HTTP errors (404 for unknown paths, 405) and unexpected
exceptions (500) into problem documents. :func:`problem_responses` documents them in OpenAPI.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from pushgrid.protocol.exceptions import RETRYABLE_HTTP_STATUSES, PushgridError

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE: Final = "application/problem+json"
TYPE_PREFIX: Final = "urn:pushgrid:admin:"
PROBLEM_REF: Final = "#/components/schemas/Problem"
BEARER_CHALLENGE: Final = 'Bearer realm="pushgrid-admin"'

# Default code per status, when the raiser gives none.
_CODES: Final[dict[int, str]] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    429: "too_many_attempts",
    500: "internal",
    502: "member_error",
    503: "unavailable",
    504: "member_timeout",
}


class ValidationIssue(BaseModel):
    """One reason a request was refused (``errors`` of a 422 problem)."""

    loc: list[str | int] = Field(description="Where: e.g. ['query', 'limit'] or ['body', 'name']")
    msg: str
    type: str


class Problem(BaseModel):
    """An RFC 9457 problem details document (``application/problem+json``)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "example": {
                "type": "urn:pushgrid:admin:member_unreachable",
                "title": "Bad Gateway",
                "status": 502,
                "detail": "member 'push-2' (http://10.0.0.2:8900) is unreachable: "
                "connection refused",
                "instance": "/api/v1/stats/live/push-2",
                "code": "member_unreachable",
                "member": "push-2",
            }
        },
    )

    type: str = Field(description="URI of the problem type: urn:pushgrid:admin:<code>")
    title: str = Field(description="The HTTP status phrase")
    status: int = Field(ge=100, le=599)
    detail: str | None = Field(default=None, description="What went wrong, for people")
    instance: str | None = Field(default=None, description="The request path")
    code: str = Field(description="Machine-readable code (also the end of `type`)")
    member: str | None = Field(default=None, description="The member an error is about")
    errors: list[ValidationIssue] | None = Field(
        default=None, description="Validation failures (422)"
    )


class ProblemError(PushgridError):
    """An error answered as a problem document (raise it from anywhere in the API)."""

    def __init__(
        self,
        status: int,
        detail: str,
        code: str | None = None,
        *,
        member: str | None = None,
        headers: Mapping[str, str] | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code or _CODES.get(status, "error")
        self.retryable = status in RETRYABLE_HTTP_STATUSES
        self.member = member
        self.headers = dict(headers or {})
        self.extensions = dict(extensions or {})


def unauthorized(detail: str, error: str | None = None) -> ProblemError:
    challenge = BEARER_CHALLENGE if error is None else f'{BEARER_CHALLENGE}, error="{error}"'
    return ProblemError(401, detail, "unauthorized", headers={"WWW-Authenticate": challenge})


def not_found(detail: str) -> ProblemError:
    return ProblemError(404, detail, "not_found")


def conflict(detail: str, code: str = "conflict") -> ProblemError:
    return ProblemError(409, detail, code)


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem_document(
    status: int,
    detail: str | None,
    code: str | None = None,
    *,
    instance: str | None = None,
    member: str | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    code = code or _CODES.get(status, "error")
    document: dict[str, Any] = {
        "type": TYPE_PREFIX + code,
        "title": _title(status),
        "status": status,
        "detail": detail,
        "instance": instance,
        "code": code,
    }
    if member is not None:
        document["member"] = member
    for key, value in (extensions or {}).items():
        document.setdefault(key, value)
    return document


def problem_response(
    request: Request,
    status: int,
    detail: str | None,
    code: str | None = None,
    *,
    member: str | None = None,
    headers: Mapping[str, str] | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> JSONResponse:
    document = problem_document(
        status,
        detail,
        code,
        instance=request.url.path,
        member=member,
        extensions=extensions,
    )
    # The audit log keeps the detail of a failed mutating request.
    request.state.problem_detail = detail
    return JSONResponse(
        document, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=dict(headers or {})
    )


def _issues(errors: Sequence[Any]) -> list[dict[str, Any]]:
    issues = []
    for error in errors:
        loc = [part if isinstance(part, int) else str(part) for part in error.get("loc", ())]
        issues.append({"loc": loc, "msg": str(error.get("msg", "")), "type": str(error["type"])})
    return issues


async def _on_problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ProblemError)
    return problem_response(
        request,
        exc.status,
        exc.detail,
        exc.code,
        member=exc.member,
        headers=exc.headers,
        extensions=exc.extensions,
    )


async def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    issues = _issues(exc.errors())
    summary = "; ".join(
        f"{'.'.join(str(p) for p in issue['loc'])}: {issue['msg']}" for issue in issues[:5]
    )
    return problem_response(
        request,
        422,
        f"invalid request: {summary}" if summary else "invalid request",
        "validation_failed",
        extensions={"errors": issues},
    )


async def _on_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else None
    if exc.status_code == 404 and detail in (None, "Not Found"):
        detail = f"no resource at {request.url.path}"
    elif exc.status_code == 405 and detail in (None, "Method Not Allowed"):
        detail = f"{request.method} is not allowed on {request.url.path}"
    return problem_response(request, exc.status_code, detail, headers=exc.headers)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(
        request, 500, f"internal error: {type(exc).__name__} (see the admin API's log)"
    )


def install(app: FastAPI) -> None:
    """Answer every error of ``app`` with a problem document."""
    app.add_exception_handler(ProblemError, _on_problem)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(Exception, _on_unexpected)


_DESCRIPTIONS: Final[dict[int, str]] = {
    400: "The request cannot be parsed (e.g. a body that is not UTF-8 JSON)",
    401: "No token, or an unknown or revoked token (`WWW-Authenticate: Bearer`)",
    403: "The token's role is below the route's role",
    404: "Not found",
    409: "Conflict with the current state",
    413: "The member refused the message as too large",
    422: "Invalid request (parameters or body); `errors` lists the reasons",
    429: "Too many failed token attempts from this address: wait `Retry-After` seconds",
    500: "Internal error of the admin API",
    502: "The member is unreachable, refused the admin API's credentials or answered an error "
    "(`member` names it)",
    503: "The member's engine cannot accept the message",
    504: "The member did not answer in time (`member` names it)",
}

_CHALLENGE_HEADER: Final = {
    "WWW-Authenticate": {
        "description": "The Bearer challenge",
        "schema": {"type": "string"},
    }
}

COMMON_ERRORS: Final[tuple[int, ...]] = (400, 401, 403, 422, 429, 500)
MEMBER_ERRORS: Final[tuple[int, ...]] = (404, 502, 504)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these statuses, plus 400, 401, 403, 422, 429 and 500, as
    problems."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*COMMON_ERRORS, *statuses}):
        response: dict[str, Any] = {
            "description": _DESCRIPTIONS.get(status, _title(status)),
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": PROBLEM_REF}}},
        }
        if status == 401:
            response["headers"] = _CHALLENGE_HEADER
        out[status] = response
    return out
