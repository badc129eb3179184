"""The audit middleware: every mutating request under ``/api/v1`` is recorded in ``admin_audit``.

Mutating means POST, PUT, PATCH or DELETE, whatever the outcome: a success, a refusal (401 with
no actor, 403 with the token's name and role), a validation error or a failure. The entry is
written when the response starts, before the client has it, so a client that reads the audit log
right after its call finds the call there.

Recorded: the time, the actor (the token's name, id and role, when the token was valid), method,
path, action (the route's name, e.g. ``members.register``), target (what the route says it acted
on, else the path parameters), the HTTP status and a detail (the problem's detail on failure).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import anyio.to_thread
from sqlalchemy.orm import Session, sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .security import Principal
from .services.audit import AuditRecord, AuditService

log = logging.getLogger(__name__)

MUTATING: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class AuditMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        session_factory: Callable[[], sessionmaker[Session]],
        prefix: str = "/api/",
    ) -> None:
        self.app = app
        self.session_factory = session_factory
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in MUTATING
            or not str(scope.get("path", "")).startswith(self.prefix)
        ):
            await self.app(scope, receive, send)
            return
        recorded = False

        async def send_and_record(message: Message) -> None:
            nonlocal recorded
            if message["type"] == "http.response.start" and not recorded:
                recorded = True
                await self._record(scope, int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        except BaseException:
            if not recorded:
                recorded = True
                await self._record(scope, 500)
            raise

    async def _record(self, scope: Scope, status: int) -> None:
        record = build_record(scope, status)
        try:
            await anyio.to_thread.run_sync(self._write, record)
        except Exception:
            log.exception("cannot write the audit entry %s", record)

    def _write(self, record: AuditRecord) -> None:
        with self.session_factory()() as db:
            AuditService(db).record(record)


def build_record(scope: Scope, status: int) -> AuditRecord:
    state: dict[str, Any] = scope.get("state") or {}
    principal = state.get("principal")
    route = scope.get("route")
    action = getattr(route, "name", None) or "unrouted"
    path_params: dict[str, Any] = scope.get("path_params") or {}
    target = state.get("audit_target")
    if target is None and path_params:
        target = ",".join(f"{key}={value}" for key, value in path_params.items())
    detail = state.get("audit_detail")
    if status >= 400:
        problem = state.get("problem_detail")
        detail = f"{detail}; {problem}" if detail and problem else (problem or detail)
    return AuditRecord(
        method=str(scope["method"]),
        path=str(scope.get("path", "")),
        action=str(action),
        status=status,
        # a sign-in attempt names its user before anyone is authenticated (ADR 052)
        actor=principal.name if isinstance(principal, Principal) else state.get("audit_actor"),
        token_id=principal.token_id if isinstance(principal, Principal) else None,
        role=principal.role.value if isinstance(principal, Principal) else None,
        target=None if target is None else str(target),
        detail=None if detail is None else str(detail),
    )
