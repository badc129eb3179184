"""What the monitoring views read from the server: narrow ports, never the server object.

Two kinds of state, two ways to read them (ADR 014):

* the per-second :class:`~metrics.readmodel.ReadModel` (indicators, windows, archive, hot
  subjects): immutable, published by the sampler with one reference swap, read from any thread;
* :class:`LiveState`: the counters and engine gauges *now*, read on the event loop (an answer to
  "how many sessions" must count the session that just connected, not the one of last second).

Every view takes a :class:`MonitoredNode` (or the :class:`Operations` port for MBean operations);
``server.app.PushServer`` satisfies both, and nothing in this package imports it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar

from pushgrid.metrics.canary import CanaryState
from pushgrid.metrics.delays import DelaySnapshot
from pushgrid.metrics.member_panel import EMPTY_PANEL
from pushgrid.metrics.readmodel import ReadModel
from pushgrid.ops.accounting import AccountingDocument
from pushgrid.ops.panel import MemberPanel

from ..cluster.status import ClusterStatus
from ..engine.base import EngineStats
from .delivery_view import NO_DELIVERY, DeliveryReading


@dataclass(frozen=True, slots=True)
class DeflateStats:
    """permessage-deflate now (ADR 028, ADR 032): connections holding a compressor with context
    takeover against ``DeflateMaxContexts``, and the bytes of the data frames sent on deflate
    connections, plain (what they would have taken) and as written."""

    enabled: bool = False
    contexts: int = 0
    max_contexts: int = 0
    uncompressed_bytes: int = 0
    compressed_bytes: int = 0


NO_DEFLATE = DeflateStats()


@dataclass(frozen=True, slots=True)
class WorkerRow:
    """One process of a multi-process server (Workers > 1, docs/workers.md), as worker 0 last
    heard of it: ``report_age`` seconds ago (0 for worker 0 itself; growing while the process
    is stopped or stuck)."""

    index: int
    pid: int
    cpu_seconds: float
    rss_bytes: int
    connections: int  # client and monitoring connections it holds
    sessions: int  # of which WebSocket / SSE sessions
    open_files: int
    report_age: float
    # worker 0 has a mesh link to it (False: dead, restarting, or not yet linked)
    linked: bool = True
    # its event loop's lag: the last 1 s probe sleep's lateness, the max over the panel's 60 s
    loop_lag_seconds: float | None = None
    loop_lag_max_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class LiveState:
    """The node's live numbers, read at once on the event loop."""

    server_name: str
    uptime: float  # seconds since start, rounded to ms
    started_at: float  # Unix time
    engine_name: str
    delivery_mode: str
    counters: Mapping[str, int]  # metrics.counters.Counters.as_dict()
    engine: EngineStats
    # refusals of the hardening limits (docs/security.md): auth_failures, auth_throttled,
    # pending_refused, protocol_errors, http_refused, inflating_refused
    refusals: Mapping[str, int]
    # per flush, how long its oldest queued frame waited for the write (ADR 012)
    flush_delay: DelaySnapshot
    # the operator's member panel (metrics/member_panel.py), built once a second by the probe
    panel: MemberPanel = EMPTY_PANEL
    deflate: DeflateStats = NO_DEFLATE
    # the server's processes, worker 0 first (empty with Workers = 1: nothing changes there)
    workers: tuple[WorkerRow, ...] = ()
    # the clients' delivery reports and the server's legs, read once a second (ADR 048)
    delivery: DeliveryReading = NO_DELIVERY


class MonitoredNode(Protocol):
    """What /stats, /metrics, /health, the meta-subjects and the MBean attributes read."""

    def read_model(self) -> ReadModel: ...

    def live_state(self) -> LiveState: ...

    def cluster_status(self) -> ClusterStatus: ...

    def canary_state(self) -> CanaryState: ...

    def canary_probe_key(self) -> str: ...

    def accounting(self) -> AccountingDocument: ...

    @property
    def stopping(self) -> bool: ...


T = TypeVar("T")
Maybe: TypeAlias = T | Awaitable[T]  # a value now, or one to await (the loop bridge awaits it)


class Operations(Protocol):
    """The MBean operations and the attributes that walk the hub (on the event loop)."""

    # a session operation of a multi-process server asks the other workers too: awaitable
    def session_list(self) -> Maybe[list[dict[str, Any]]]: ...

    def session_detail(self, session_id: str, keep: int = 20) -> Maybe[dict[str, Any] | None]: ...

    def disconnect(self, session_id: str) -> Maybe[bool]: ...

    def slow_consumers(self) -> Maybe[list[dict[str, Any]]]: ...

    def trace_open(self, kind: str, value: str) -> Maybe[dict[str, Any]]: ...

    def trace_read(self, trace_id: str, after: int, limit: int) -> Maybe[dict[str, Any] | None]: ...

    def trace_close(self, trace_id: str) -> Maybe[bool]: ...

    async def subject_snapshot(self, subject: str) -> dict[str, Any] | None: ...

    async def subscriber_count(self, subject: str) -> int: ...

    def subscribed_subjects(self) -> int: ...

    def subject_occupancy(self, subject: str) -> dict[str, Any]: ...

    def subject_presence(self, subject: str) -> dict[str, Any]: ...

    def occupied_subjects(self) -> int: ...

    async def publish_alert(self, summary: str, fields: Any) -> int: ...

    def watch(self, pattern: str) -> dict[str, Any]: ...

    def unwatch(self, pattern: str) -> dict[str, Any]: ...

    async def subject_list(self, pattern: str) -> dict[str, Any]: ...

    async def subject_history(self, subject: str, limit: int) -> list[dict[str, Any]]: ...

    async def remove_snapshot(self, subject: str) -> dict[str, Any]: ...

    def unsubscribe(self, session_id: str, subject: str) -> Maybe[bool]: ...
