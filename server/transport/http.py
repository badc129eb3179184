"""HTTP endpoints on the client port: /health, /snapshot, /publish.

Errors are RFC 9457 problem+json documents whose ``code`` is the same machine-readable code the
WebSocket protocol uses (docs/protocol.md).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import h11
import msgspec

from pushgrid import __version__
from pushgrid.config import SessionSettings
from pushgrid.kernel.throttle import host_of
from pushgrid.metrics.counters import Counters
from pushgrid.protocol.codec import Limits, decode_publish_body
from pushgrid.protocol.errors import ErrorCode, InvalidSubject, RemoteProtocolError
from pushgrid.protocol.frames import (
    Position,
    SubscribeItem,
    client_id_error,
)
from pushgrid.protocol.subjects import validate_subject

from ..cluster.status import ClusterStatus
from ..core.entitlement import Entitlement
from ..core.publishing import Admission, Publisher, Refusal, arrived
from ..engine.base import Engine
from .sse import parse_last_event_id, parse_position


class HttpServices(Protocol):
    """What the client port's HTTP endpoints need from the server (PushServer satisfies it)."""

    @property
    def server_name(self) -> str: ...

    @property
    def session_settings(self) -> SessionSettings: ...  # MaxMessageSize, MaxSubjectsPerStream

    @property
    def stopping(self) -> bool: ...

    @property
    def started_at(self) -> float: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def counters(self) -> Counters: ...

    @property
    def entitlement(self) -> Entitlement: ...

    @property
    def admission(self) -> Admission:
        """The one admission path of a publish (core/publishing.py), as for WebSocket."""

    def cluster_status(self) -> ClusterStatus: ...

    def isolation(self) -> str | None: ...

    def may_publish(self, host: str) -> bool: ...


Route = Callable[
    [HttpServices, h11.Request, dict[str, list[str]], bytes, str],
    Awaitable["Response | SseRequest"],
]

_json = msgspec.json.Encoder()
CORS = [
    ("access-control-allow-origin", "*"),
    ("access-control-allow-headers", "authorization, content-type"),
    ("access-control-allow-methods", "GET, POST, OPTIONS"),
]


@dataclass(frozen=True, slots=True)
class SseRequest:
    """``GET /events`` accepted: the connection turns into an event stream (transport/sse.py)."""

    items: list[SubscribeItem]
    token: str | None
    positions: dict[str, Position]


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def is_websocket_upgrade(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    return any(name == b"upgrade" and value.lower() == b"websocket" for name, value in headers)


def json_response(status: int, payload: Any) -> Response:
    return Response(status, _json.encode(payload), [("content-type", "application/json"), *CORS])


def problem(status: int, code: str, detail: str) -> Response:
    body = {
        "type": f"urn:pushgrid:error:{code}",
        "title": code.replace("_", " "),
        "status": status,
        "detail": detail,
        "code": code,
    }
    return Response(
        status, _json.encode(body), [("content-type", "application/problem+json"), *CORS]
    )


def isolated_problem(reason: str, what: str = "connect") -> Response:
    """The answer to a WebSocket upgrade, an event stream or a publish while this member does
    not see its cluster (server/cluster/isolation.py): its subscriptions would get nothing, its
    publishes would wait for a quorum it cannot reach (nothing was stored)."""
    response = problem(
        503,
        "cluster_isolated",
        f"this member does not see its cluster ({reason}): {what} through another server",
    )
    return Response(503, response.body, [*response.headers, ("retry-after", "5")])


def _header(request: h11.Request, name: bytes) -> str | None:
    for key, value in request.headers:
        if key == name:
            return value.decode("latin-1")
    return None


def _token(request: h11.Request, query: dict[str, list[str]]) -> str | None:
    auth = _header(request, b"authorization")
    if auth and auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return query.get("token", [None])[0]


async def handle(
    app: HttpServices, request: h11.Request, body: bytes, remote: str
) -> Response | SseRequest:
    url = urlsplit(request.target.decode("utf-8", "replace"))
    query = parse_qs(url.query)
    method = request.method.decode("ascii", "replace")
    if method == "OPTIONS":
        return Response(204, b"", list(CORS))
    route = _ROUTES.get(url.path)
    if route is None:
        return problem(404, "not_found", f"no resource at {url.path}")
    if method != route[0] and not (method == "HEAD" and route[0] == "GET"):
        response = problem(405, "method_not_allowed", f"{url.path} accepts {route[0]}")
        return Response(response.status, response.body, [*response.headers, ("allow", route[0])])
    return await route[1](app, request, query, body, remote)


async def _health(
    app: HttpServices, request: h11.Request, query: dict[str, list[str]], body: bytes, remote: str
) -> Response:
    cluster = app.cluster_status()
    payload = {
        "status": "stopping" if app.stopping else cluster.health,
        "mode": cluster.mode,
        "quorum": cluster.quorum,
        "server": app.server_name,
        "version": __version__,
        "engine": app.engine.name,
        "sessions": app.counters.sessions,
        "uptime": round(time.time() - app.started_at, 3),
    }
    return json_response(503 if app.stopping else 200, payload)


async def _snapshot(
    app: HttpServices, request: h11.Request, query: dict[str, list[str]], body: bytes, remote: str
) -> Response:
    subject = query.get("subject", [""])[0]
    try:
        validate_subject(subject)
    except InvalidSubject as invalid:
        return problem(400, invalid.code, invalid.message)
    grant = app.entitlement.grant(_token(request, query))
    (denial,) = await app.entitlement.subscribe_denials(grant, remote, [subject])
    if denial is not None:
        return problem(403, ErrorCode.DENIED, denial)
    snapshot = await app.engine.snapshot(subject)
    if snapshot is None:
        return problem(404, "no_snapshot", f"no snapshot for {subject}")
    accept = _header(request, b"accept") or ""
    if "application/json" in accept:
        return json_response(
            200,
            {
                "subject": subject,
                "content": snapshot.content,
                "fields": snapshot.fields,
                "epoch": snapshot.epoch,
                "seq": snapshot.seq,
            },
        )
    headers = [("content-type", "text/plain; charset=utf-8"), *CORS]
    return Response(200, snapshot.content.encode("utf-8", "surrogatepass"), headers)


# An HTTP status for each code the protocol's publish checks answer (protocol/codec.py)
_CHECK_STATUS = {ErrorCode.MESSAGE_TOO_LARGE: 413}


async def _publish(
    app: HttpServices, request: h11.Request, query: dict[str, list[str]], body: bytes, remote: str
) -> Response:
    limits = Limits(max_message_size=app.session_settings.max_message_size)
    try:
        op = decode_publish_body(body, limits)
    except RemoteProtocolError as error:
        return problem(_CHECK_STATUS.get(error.code, 400), error.code, error.message)
    isolated = app.isolation()
    if isolated is not None:
        # Nothing is sent to the cluster, so the outcome is "not stored": the publisher retries
        # through another member at once instead of waiting ClusterPublishTimeout for a quorum
        # this member cannot reach (a WebSocket session is closed with 4007 instead).
        return isolated_problem(isolated, "publish")
    publish_request = arrived(op)
    host = host_of(remote)
    grant = app.entitlement.grant(_token(request, query))
    publisher = Publisher(remote, host, grant, app.may_publish(host))
    outcome = await app.admission.publish(publisher, publish_request)
    if isinstance(outcome, Refusal):
        return _refusal_problem(outcome)
    answer: dict[str, object] = {"result": "ok", "epoch": outcome.epoch, "seq": outcome.seq}
    if outcome.duplicate:
        answer["duplicate"] = True
    return json_response(200, answer)


_REFUSAL_STATUS = {
    ErrorCode.DENIED: 403,
    ErrorCode.RESERVED_SUBJECT: 403,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.TOO_MANY_FIELDS: 413,
    ErrorCode.SNAPSHOT_TOO_LARGE: 413,
    ErrorCode.ENGINE_UNAVAILABLE: 503,
    # the node's memory bound (guarantee 8), not the client's rate
    ErrorCode.TOO_MANY_SUBJECTS: 507,
    ErrorCode.RETAINED_BYTES_EXCEEDED: 507,
    ErrorCode.DEDUP_TABLE_FULL: 507,
}


def _refusal_problem(refusal: Refusal) -> Response:
    """A refused publish as problem+json (the status says what the client can do about it)."""
    response = problem(_REFUSAL_STATUS.get(refusal.code, 400), refusal.code, refusal.reason)
    if refusal.code is ErrorCode.RATE_LIMITED:
        response.headers.append(("retry-after", "1"))
    return response


async def _events(
    app: HttpServices, request: h11.Request, query: dict[str, list[str]], body: bytes, remote: str
) -> Response | SseRequest:
    subjects = list(dict.fromkeys(query.get("subject", [])))
    if not subjects:
        return problem(400, ErrorCode.INVALID_FRAME, "give at least one ?subject=")
    limit = app.session_settings.max_subjects_per_stream
    if len(subjects) > limit:
        # Every event id holds the position of each subject of the stream: bound its size.
        return problem(
            400,
            ErrorCode.INVALID_FRAME,
            f"{len(subjects)} subjects: an event stream takes at most {limit} "
            "(MaxSubjectsPerStream); open several streams",
        )
    try:
        conflation = int(query.get("conflation", ["0"])[0])
        history = int(query.get("history", ["0"])[0])
        positions = dict(parse_position(p) for p in query.get("position", []))
        last_event_id = _header(request, b"last-event-id")
        if last_event_id:
            positions.update(parse_last_event_id(last_event_id))
    except ValueError as exc:
        return problem(400, ErrorCode.INVALID_FRAME, str(exc))
    if conflation < 0 or not 0 <= history <= 1000:
        return problem(400, ErrorCode.INVALID_FRAME, "conflation >= 0 and history 0-1000")
    if len(positions) > limit:
        return problem(400, ErrorCode.INVALID_FRAME, f"at most {limit} positions")
    deltas = _delta_subjects(query.get("delta", []), subjects)
    if isinstance(deltas, str):
        return problem(400, ErrorCode.INVALID_FRAME, deltas)
    client = _stream_client_id(query.get("client_id", []))
    if isinstance(client, Response):
        return client
    items = [
        SubscribeItem(
            subject,
            positions.get(subject),
            history,
            conflation,
            delta=subject in deltas,
            client_id=msgspec.UNSET if client is None else client,
        )
        for subject in subjects
    ]
    return SseRequest(items, _token(request, query), positions)


def _stream_client_id(values: list[str]) -> str | Response | None:
    """The stream's ``client_id`` (one for all its subjects: presence lists it, docs/protocol.md
    9.1), None without one, or the 400 that says why it is wrong."""
    if not values:
        return None
    if len(values) > 1:
        return problem(400, ErrorCode.INVALID_FRAME, "give client_id once: it names the stream")
    reason = client_id_error(values[0])
    return values[0] if reason is None else problem(400, ErrorCode.INVALID_FRAME, reason)


def _delta_subjects(values: list[str], subjects: list[str]) -> set[str] | str:
    """The subjects of a stream that get field deltas (``delta=<subject>``, repeatable, or
    ``delta=true`` for every subject; docs/protocol.md 9.1), or why the values are wrong."""
    if values == ["true"]:
        return set(subjects)
    unknown = [value for value in values if value not in subjects]
    if unknown:
        return (
            f"delta={unknown[0]!r}: name a subject of the stream (repeat delta= for several) "
            "or give delta=true for every subject"
        )
    return set(values)


async def _events_unless_isolated(
    app: HttpServices, request: h11.Request, query: dict[str, list[str]], body: bytes, remote: str
) -> Response | SseRequest:
    reason = app.isolation()
    if reason is not None:
        return isolated_problem(reason)
    return await _events(app, request, query, body, remote)


@functools.cache
def _client_file(name: str) -> bytes | None:
    """A file of the browser client (``pushgrid.client/js``), read once per process."""
    try:
        return resources.files("pushgrid.client").joinpath("js", name).read_bytes()
    except OSError:
        return None


def _static(name: str, content_type: str) -> Route:
    async def serve(
        app: HttpServices,
        request: h11.Request,
        query: dict[str, list[str]],
        body: bytes,
        remote: str,
    ) -> Response:
        data = _client_file(name)
        if data is None:
            return problem(404, "not_found", f"{name} is not installed")
        return Response(
            200, data, [("content-type", content_type), ("cache-control", "no-cache"), *CORS]
        )

    return serve


#: path -> (method, handler): built once, not per request
_ROUTES: dict[str, tuple[str, Route]] = {
    "/health": ("GET", _health),
    "/snapshot": ("GET", _snapshot),
    "/publish": ("POST", _publish),
    "/events": ("GET", _events_unless_isolated),
    "/pushgrid.js": ("GET", _static("pushgrid.js", "text/javascript; charset=utf-8")),
    "/demo": ("GET", _static("demo.html", "text/html; charset=utf-8")),
}
