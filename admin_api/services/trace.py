"""Live trace of a subject: the admin API subscribes to a member's client port as an ordinary
pushgrid client (:class:`client.PushgridClient`) and keeps the messages in a bounded buffer that
the console polls (``GET /api/v1/traces/{id}?after=N``).

Entitlement: the trace connects with the ``entitlement_token`` of the operator's request (a JWT
allowed to subscribe to the subject), so the member enforces its own rules exactly as for any
client; a refused subscription puts the trace in status ``denied``. The token is kept in memory
for the life of the trace (reconnects need it), never stored or returned. Without entitlement on
the member, no token is needed.

Bounds: ``Trace.BufferSize`` messages per trace (the oldest are dropped and counted),
``Trace.MaxActive`` traces at once (409 beyond), and a trace nobody reads for
``Trace.IdleTimeout`` seconds is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import time
from collections import deque
from datetime import UTC, datetime
from typing import Final
from urllib.parse import urlsplit

from pushgrid.client import Message, PushgridClient, Status, StatusEvent
from pushgrid.client.backoff import BackoffPolicy
from pushgrid.config import TraceSettings

from ..member_client import MemberEndpoint
from ..problems import ProblemError, conflict, not_found
from ..schemas_ops import TraceMessage, TraceOut
from ..security import Principal
from .member_traces import MemberTraceHub

CONNECT_TIMEOUT: Final = 5.0


def ws_url(client_url: str) -> str:
    """``http://host:port`` (a member's client port) -> ``ws://host:port/ws``."""
    parts = urlsplit(client_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}/ws"


def _size(message: Message) -> int:
    return len(message.content.encode()) + sum(
        len(k.encode()) + len(v.encode()) for k, v in message.fields.items()
    )


class Trace:
    """One traced subject on one member."""

    def __init__(
        self,
        member: MemberEndpoint,
        subject: str,
        owner: Principal,
        buffer_size: int,
        token: str | None,
    ) -> None:
        self.id = secrets.token_hex(8)
        self.member = member
        self.subject = subject
        self.owner_token_id = owner.token_id  # a trace belongs to the token that opened it
        self.created_by = owner.name
        self.created_at = datetime.now(UTC)
        self.status = "connecting"
        self.error: str | None = None
        self.buffer: deque[TraceMessage] = deque(maxlen=buffer_size)
        self.next_index = 0
        self.last_read = time.monotonic()
        self._token = token
        self.client: PushgridClient | None = None

    @property
    def dropped(self) -> int:
        return self.next_index - len(self.buffer)

    def on_message(self, message: Message) -> None:
        self.buffer.append(
            TraceMessage(
                index=self.next_index,
                received_at=datetime.now(UTC),
                subject=message.subject,
                kind=str(message.type),
                seq=message.seq,
                epoch=message.epoch,
                size=_size(message),
                content=message.content,
                fields=dict(message.fields),
                retained=message.retained,
            )
        )
        self.next_index += 1

    def on_status(self, event: StatusEvent) -> None:
        if event.status == Status.SUBSCRIBE_ALLOW and event.subject == self.subject:
            self.status, self.error = "live", None
        elif event.status == Status.SUBSCRIBE_DENY and event.subject == self.subject:
            self.status, self.error = "denied", event.detail or "subscription refused"
        elif event.status == Status.SERVER_DOWN and self.status == "live":
            self.status, self.error = "connecting", event.close_reason or event.detail
        elif event.status == Status.CLOSED and self.status not in ("denied", "closed"):
            self.status = "failed"
            self.error = event.close_reason or event.detail or "the member closed the connection"

    async def start(self, client_url: str) -> None:
        self.client = PushgridClient(
            ws_url(client_url),
            token=self._token,
            on_message=self.on_message,
            on_status=self.on_status,
            backoff=BackoffPolicy(),
            proxy=None,
            queue_size=1000,
        )
        await self.client.subscribe(self.subject)
        try:
            await self.client.connect(timeout=CONNECT_TIMEOUT)
        except (TimeoutError, ConnectionError) as exc:
            self.status, self.error = "failed", f"cannot connect to {client_url}: {exc}"

    async def close(self) -> None:
        if self.status not in ("denied", "failed"):
            self.status = "closed"
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()

    def view(self, after: int = -1, limit: int = 500) -> TraceOut:
        self.last_read = time.monotonic()
        messages = list(itertools.islice((m for m in self.buffer if m.index > after), limit))
        return TraceOut(
            id=self.id,
            member=self.member.name,
            subject=self.subject,
            created_at=self.created_at,
            created_by=self.created_by,
            status=self.status,
            error=self.error,
            buffer_size=self.buffer.maxlen or 0,
            dropped=self.dropped,
            next_index=self.next_index,
            messages=messages,
        )


class TraceHub:
    """The open traces of the admin API process."""

    def __init__(self, settings: TraceSettings) -> None:
        self.settings = settings
        self.traces: dict[str, Trace] = {}
        self._reaper: asyncio.Task[None] | None = None
        # traces by client id or subject recorded inside the members (member_traces.py)
        self.recorded = MemberTraceHub(settings.trace_max_active)

    def start(self) -> None:
        """Close idle traces in the background (a browser tab closed without Stop)."""
        self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        period = min(30.0, self.settings.trace_idle_timeout / 2)
        while True:
            await asyncio.sleep(period)
            await self._reap()

    async def open(
        self,
        member: MemberEndpoint,
        client_url: str,
        subject: str,
        owner: Principal,
        token: str | None,
    ) -> Trace:
        await self._reap()
        if len(self.traces) >= self.settings.trace_max_active:
            raise conflict(
                f"{len(self.traces)} traces are open (Trace.MaxActive): close one first",
                "too_many_traces",
            )
        trace = Trace(member, subject, owner, self.settings.trace_buffer_size, token)
        await trace.start(client_url)
        if trace.status == "failed":
            await trace.close()
            raise ProblemError(502, trace.error or "cannot connect", "member_unreachable")
        self.traces[trace.id] = trace
        return trace

    def get(self, trace_id: str, caller: Principal) -> Trace:
        """The caller's own trace; another token's is 404, as if it did not exist."""
        trace = self.traces.get(trace_id)
        if trace is None or trace.owner_token_id != caller.token_id:
            raise not_found(f"no open trace {trace_id!r} of yours")
        return trace

    async def close_one(self, trace_id: str, caller: Principal) -> None:
        self.get(trace_id, caller)
        await self._drop(trace_id)

    async def _drop(self, trace_id: str) -> None:
        trace = self.traces.pop(trace_id, None)
        if trace is not None:
            await trace.close()

    async def _reap(self) -> None:
        idle = time.monotonic() - self.settings.trace_idle_timeout
        for trace_id in [t.id for t in self.traces.values() if t.last_read < idle]:
            await self._drop(trace_id)

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for trace_id in list(self.traces):
            await self._drop(trace_id)
        await self.recorded.close()
