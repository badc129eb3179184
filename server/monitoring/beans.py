"""The pushgrid MBeans (domain ``pushgrid``) and the Jolokia agent that serves them.

Every MBean is a table of rows (name, type, description, getter). Jolokia requests are answered
on a worker thread (the agent is synchronous), so a getter reads one of two things:

* the sampler's :class:`~metrics.readmodel.ReadModel` (``_model`` rows): immutable, read
  directly, no hop to the event loop (ADR 014);
* the live state or the hub (``_live`` rows, operations): marshalled onto the event loop by
  :class:`~server.monitoring.loop_bridge.LoopBridge`, so they see the same state as the rest of
  the server and may await the engine.

=====================================  =====================================================
ObjectName                              content
=====================================  =====================================================
pushgrid:type=Server                    identity, uptime, engine, totals, configuration
pushgrid:type=Indicator,name=<Name>     one per spec indicator: Current, Total and Max/
                                        Average/StdDev/Count per window (``Max1m`` ...)
pushgrid:type=Cache                     cache size and limits, recovery outcomes
pushgrid:type=Sessions                  Count; ops ``list()``, ``detail(String id)``,
                                        ``disconnect(String id)``, ``slowConsumers()``,
                                        ``traceOpen/traceRead/traceClose``
pushgrid:type=Subjects                  Count; ops ``snapshot(String subject)``,
                                        ``subscriberCount(String subject)``,
                                        ``occupancy(String subject)``,
                                        ``presence(String subject)``; Occupied
pushgrid:type=HotSubjects               top subjects by messages in/out, bytes out and
                                        subscribers (metrics/hotsubjects.py)
pushgrid:type=MemberPanel               process CPU, RSS, open files, event-loop lag, flush
                                        delay p50/p99, slow consumers, replica lag
                                        (metrics/member_panel.py)
pushgrid:type=WatchedSubjects           watched patterns: totals, rates, subscribers,
                                        subjects, windows; ops ``watch(String pattern)``,
                                        ``unwatch(String pattern)`` (server/core/watch.py)
pushgrid:type=Delivery                  the clients' delivery latency and loss, the server's
                                        legs (ops/delivery.py, server/core/delivery.py)
=====================================  =====================================================
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from pushgrid import __version__
from pushgrid.config import EngineLimitSettings, Settings
from pushgrid.kernel.redaction import redact_setting
from pushgrid.metrics.indicators import INDICATORS, Indicator
from pushgrid.metrics.readmodel import ReadModel
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops import names
from pushgrid.ops.attributes import attributes as contract_attributes
from pushgrid.ops.delivery import DeliveryDocument
from pushgrid.ops.indicator import WINDOW_LABELS, IndicatorDocument, window_attribute
from pushgrid.ops.panel import PanelAttributes
from pushgrid.ops.server import ServerDocument, list_text

from ..engine.base import ALERTS_SUBJECT
from .accounting_view import accounting_bean
from .canary_view import canary_bean
from .cluster_view import cluster_bean
from .jolokia import JolokiaAgent, JolokiaLimits
from .loop_bridge import LoopBridge
from .mbeans import Attribute, MBean, MBeanRegistry, ObjectName, Operation, document_attributes
from .ports import LiveState, MonitoredNode, Operations
from .watched_view import summary
from .workers_view import workers_bean

# A row of an MBean table: name, Java-like type, description, getter over the source.
ModelRow = tuple[str, str, str, Callable[[ReadModel], Any]]
LiveRow = tuple[str, str, str, Callable[[LiveState], Any]]


class _Tables:
    """Turns rows into :class:`Attribute` s over one node (model rows direct, live rows hop)."""

    def __init__(self, node: MonitoredNode, bridge: LoopBridge) -> None:
        self.node = node
        self.bridge = bridge

    def model(self, rows: Sequence[ModelRow]) -> list[Attribute]:
        node = self.node

        def getter(read: Callable[[ReadModel], Any]) -> Callable[[], Any]:
            return lambda: read(node.read_model())

        return [Attribute(name, type_, text, getter(read)) for name, type_, text, read in rows]

    def live(self, rows: Sequence[LiveRow]) -> list[Attribute]:
        node, wrap = self.node, self.bridge.wrap

        def getter(read: Callable[[LiveState], Any]) -> Callable[[], Any]:
            return wrap(lambda: read(node.live_state()))

        return [Attribute(name, type_, text, getter(read)) for name, type_, text, read in rows]

    def document(self, build: Callable[[LiveState], msgspec.Struct]) -> list[Attribute]:
        """The live attributes of the contract document ``build`` returns (its return type)."""
        node = self.node
        document_type = typing.get_type_hints(build)["return"]
        return document_attributes(
            document_type, lambda: build(node.live_state()), self.bridge.wrap
        )


def build_agent(
    node: MonitoredNode, operations: Operations, settings: Settings, bridge: LoopBridge
) -> JolokiaAgent:
    registry = MBeanRegistry()
    for mbean in server_beans(node, operations, settings, bridge):
        registry.register(mbean)
    return JolokiaAgent(
        registry,
        agent_id=f"pushgrid-{settings.server_name}",
        version=__version__,
        extra_info={"server": settings.server_name},
        limits=JolokiaLimits(settings.jolokia_max_bulk_requests, settings.jolokia_max_answer_bytes),
    )


def server_beans(
    node: MonitoredNode, operations: Operations, settings: Settings, bridge: LoopBridge
) -> list[MBean]:
    tables = _Tables(node, bridge)
    return [
        _server_bean(tables, settings),
        *(indicator_bean(tables, indicator) for indicator in INDICATORS),
        _cache_bean(tables, settings.engine_limits),
        _compression_bean(tables),
        _sessions_bean(tables, operations),
        _subjects_bean(tables, operations),
        cluster_bean(node, bridge.wrap),
        canary_bean(node, bridge.wrap),
        accounting_bean(node, bridge.wrap),
        hot_subjects_bean(tables),
        member_panel_bean(tables),
        watched_subjects_bean(tables, operations),
        delivery_bean(tables),
        workers_bean(node, bridge.wrap),  # the CLI gives worker 0 the supervisor's board
    ]


def delivery_bean(tables: _Tables) -> MBean:
    """What the clients report of their deliveries and the server's legs (ADR 048)."""

    def document(s: LiveState) -> DeliveryDocument:
        return s.delivery.document

    name = ObjectName.parse(names.DELIVERY)
    return MBean(name, "Delivery latency and loss", tables.document(document))


def _server_bean(tables: _Tables, settings: Settings) -> MBean:
    config, typed = configuration(settings), settings_document(settings)

    def document(s: LiveState) -> ServerDocument:
        return ServerDocument(
            server_name=s.server_name,
            version=__version__,
            uptime=s.uptime,
            start_time=int(s.started_at * 1000),
            engine=s.engine_name,
            delivery_mode=s.delivery_mode,
            connected_users=s.counters["sessions"],
            subscriptions=s.counters["subscriptions"],
            counters=dict(s.counters),
            configuration=config,
            settings=typed,
        )

    return MBean(ObjectName.parse(names.SERVER), "The pushgrid server", tables.document(document))


def indicator_attributes(tables: _Tables, indicator: Indicator) -> list[Attribute]:
    """The attributes of :class:`IndicatorDocument`, in its order: each field of the contract
    with its getter (the sampled second's read model, or the live counter for ``Total``)."""
    name = indicator.name
    model: dict[str, Callable[[ReadModel], Any]] = {
        "description": lambda m: indicator.description,
        "unit": lambda m: indicator.unit,
        "current": lambda m: m.current(name),
        "sample_time": lambda m: m.ts,
        "recent": lambda m: m.recent_values(name),
        "windows": lambda m: {w: r.as_dict() for w, r in m.indicators[name].windows.items()},
    }
    live: dict[str, Callable[[LiveState], Any]] = {"total": lambda s: s.counters[indicator.counter]}
    out: list[Attribute] = []
    for spec in contract_attributes(IndicatorDocument):  # a field without a getter: KeyError
        head = (spec.name, spec.type, spec.description)
        if spec.field in live:
            out += tables.live([(*head, live[spec.field])])
        else:
            out += tables.model([(*head, model[spec.field])])
    return out


def window_rows(indicator: Indicator) -> list[ModelRow]:
    """The per-window scalars (``Max1m`` ...): ``Windows`` again, one attribute per number."""
    name = indicator.name

    def read(window: str, stat: str) -> Callable[[ReadModel], Any]:
        return lambda m: getattr(m.window(name, window), stat)

    rows: list[ModelRow] = []
    for window in WINDOW_NAMES:
        for stat, label in WINDOW_LABELS.items():
            kind = "long" if stat == "count" else "double"
            rows.append(
                (
                    window_attribute(stat, window),
                    kind,
                    f"{label} over the last {window}",
                    read(window, stat),
                )
            )
    return rows


def indicator_bean(tables: _Tables, indicator: Indicator) -> MBean:
    attributes = [*indicator_attributes(tables, indicator), *tables.model(window_rows(indicator))]
    object_name = ObjectName.of(names.DOMAIN, type="Indicator", name=indicator.mbean)
    return MBean(object_name, indicator.description, attributes)


def _cache_bean(tables: _Tables, settings: EngineLimitSettings) -> MBean:
    max_cached, expire = settings.max_cached_messages_per_subject, settings.cache_expire_time
    rows: list[LiveRow] = [
        ("Subjects", "long", "Subjects known to the engine", lambda s: s.engine.subjects),
        ("CachedMessages", "long", "Messages in the cache", lambda s: s.engine.cached_messages),
        ("CachedBytes", "long", "Bytes of cached messages", lambda s: s.engine.cached_bytes),
        ("MaxCachedMessagesPerSubject", "long", "Cache limit per subject", lambda s: max_cached),
        ("CacheExpireTime", "double", "Seconds a message stays cached", lambda s: expire),
        (
            "RecoverySuccesses",
            "long",
            "Recoveries answered from the cache",
            lambda s: s.counters["recovery_successes_total"],
        ),
        (
            "RecoveryFailures",
            "long",
            "Recoveries that needed a resync",
            lambda s: s.counters["recovery_failures_total"],
        ),
        (
            "DroppedSnapshots",
            "long",
            "Dormant snapshots given up for a new subject (MaxSubjects, MaxRetainedBytes)",
            lambda s: s.engine.dropped_snapshots,
        ),
    ]
    return MBean(ObjectName.parse(names.CACHE), "Message cache", tables.live(rows))


def _compression_bean(tables: _Tables) -> MBean:
    rows: list[LiveRow] = [
        ("Enabled", "boolean", "PerMessageDeflate setting", lambda s: s.deflate.enabled),
        (
            "Contexts",
            "long",
            "Connections holding a compressor with context takeover",
            lambda s: s.deflate.contexts,
        ),
        ("MaxContexts", "long", "DeflateMaxContexts setting", lambda s: s.deflate.max_contexts),
        (
            "UncompressedBytes",
            "long",
            "Bytes of the data frames sent on deflate connections, as plain frames",
            lambda s: s.deflate.uncompressed_bytes,
        ),
        (
            "CompressedBytes",
            "long",
            "Bytes written for those frames (compressed, or plain when it did not pay)",
            lambda s: s.deflate.compressed_bytes,
        ),
    ]
    name = ObjectName.parse(names.COMPRESSION)
    return MBean(name, "permessage-deflate", tables.live(rows))


def _sessions_bean(tables: _Tables, ops: Operations) -> MBean:
    rows: list[LiveRow] = [
        ("Count", "long", "Connected sessions", lambda s: s.counters["sessions"]),
        (
            "SlowConsumerDisconnects",
            "long",
            "Sessions closed as slow consumers",
            lambda s: s.counters["slow_consumer_disconnects_total"],
        ),
        (
            "KeepaliveTimeouts",
            "long",
            "Sessions closed for silence",
            lambda s: s.counters["keepalive_timeouts_total"],
        ),
    ]
    wrap = tables.bridge.wrap
    session_id = [("id", "java.lang.String", "Session id")]
    operations = [
        Operation(
            names.SESSIONS_LIST,
            [],
            "java.util.List",
            "Every session: id, remote, connected_since (ms), subjects, messages_in, "
            "bytes_in, bytes_out, client_id, transport, compression, messages_out, "
            "outbound_buffer_bytes, internal",
            wrap(ops.session_list),
        ),
        Operation(
            names.SESSIONS_DETAIL,
            session_id,
            "java.util.Map",
            "One session with its outbound buffer and last frames (recording starts at the "
            "first call); null if unknown",
            wrap(ops.session_detail),
        ),
        Operation(
            names.SESSIONS_DISCONNECT,
            session_id,
            "boolean",
            "Close a session with code 4003; false if unknown",
            wrap(ops.disconnect),
        ),
        Operation(
            names.SESSIONS_SLOW_CONSUMERS,
            [],
            "java.util.List",
            "The last sessions closed as slow consumers (4001), oldest first: at (ms), "
            "session, remote, client_id, transport, subjects, queued_bytes, limit",
            wrap(ops.slow_consumers),
        ),
        Operation(
            names.SESSIONS_TRACE_OPEN,
            [
                ("kind", "java.lang.String", "client or subject"),
                ("value", "java.lang.String", "The client id or the subject"),
            ],
            "java.util.Map",
            "Open a trace by client id or subject (not a subscriber): {id} or {error}",
            wrap(ops.trace_open),
        ),
        Operation(
            names.SESSIONS_TRACE_READ,
            [
                ("id", "java.lang.String", "Trace id"),
                ("after", "long", "Events after this index (-1: all kept)"),
                ("limit", "int", "At most this many events (1-5000)"),
            ],
            "java.util.Map",
            "A trace's events after an index, with ms times; null if unknown",
            wrap(ops.trace_read),
        ),
        Operation(
            names.SESSIONS_TRACE_CLOSE,
            [("id", "java.lang.String", "Trace id")],
            "boolean",
            "Close a trace; false if unknown",
            wrap(ops.trace_close),
        ),
    ]
    name = ObjectName.parse(names.SESSIONS)
    return MBean(name, "Client sessions", tables.live(rows), operations)


def _subjects_bean(tables: _Tables, ops: Operations) -> MBean:
    wrap = tables.bridge.wrap
    attributes = [
        *tables.live(
            [("Count", "long", "Subjects known to the engine", lambda s: s.engine.subjects)]
        ),
        Attribute(
            "Subscribed",
            "long",
            "Subjects with at least one local subscriber",
            wrap(ops.subscribed_subjects),
        ),
        Attribute(
            "Occupied",
            "long",
            "Subjects with at least one subscriber in the cluster (docs/occupancy.md)",
            wrap(ops.occupied_subjects),
        ),
        *tables.live(
            [
                (
                    "Subscriptions",
                    "long",
                    "Active subscriptions",
                    lambda s: s.counters["subscriptions"],
                )
            ]
        ),
    ]
    subject = [("subject", "java.lang.String", "Subject")]
    operations = [
        Operation(
            names.SUBJECTS_SNAPSHOT,
            subject,
            "java.util.Map",
            "Snapshot of a subject (null if none)",
            wrap(ops.subject_snapshot),
        ),
        Operation(
            names.SUBJECTS_SUBSCRIBER_COUNT,
            subject,
            "int",
            "Subscribers of a subject on this member (every worker's)",
            wrap(ops.subscriber_count),
        ),
        Operation(
            names.SUBJECTS_OCCUPANCY,
            subject,
            "java.util.Map",
            "Subscribers of a subject in the whole cluster and per member",
            wrap(ops.subject_occupancy),
        ),
        Operation(
            names.SUBJECTS_PRESENCE,
            subject,
            "java.util.Map",
            "Sessions (with their client ids) following a presence subject in the whole cluster",
            wrap(ops.subject_presence),
        ),
        Operation(
            names.SUBJECTS_PUBLISH_ALERT,
            [
                ("summary", "java.lang.String", "The alert's summary (the content)"),
                ("fields", "java.util.Map", "rule, target, state, severity, value, ..."),
            ],
            "long",
            f"Publish an alert on {ALERTS_SUBJECT} (a server-owned subject: clients may not)",
            wrap(ops.publish_alert),
        ),
        *_browser_operations(ops, wrap),
    ]
    return MBean(ObjectName.parse(names.SUBJECTS), "Subjects", attributes, operations)


def _browser_operations(ops: Operations, wrap: Callable[..., Any]) -> list[Operation]:
    """The subject browser's operations (ADR 051; the admin API's /subjects routes)."""
    subject = ("subject", "java.lang.String", "Subject")
    return [
        Operation(
            names.SUBJECTS_LIST,
            [("pattern", "java.lang.String", "A pattern of the entitlement rules' syntax")],
            "java.util.Map",
            "Subjects matching a pattern held or subscribed here: subject, subscribers, "
            "snapshot_bytes, last_publish (ms); at most 10,000 (truncated)",
            wrap(ops.subject_list),
        ),
        Operation(
            names.SUBJECTS_HISTORY,
            [subject, ("limit", "int", "How many (at most 100)")],
            "java.util.List",
            "The last cached messages of a subject, oldest first: epoch, seq, ts, content",
            wrap(ops.subject_history),
        ),
        Operation(
            names.SUBJECTS_REMOVE_SNAPSHOT,
            [subject],
            "java.util.Map",
            "Remove the retained snapshot on every member: subject, removed (false: there was "
            "none), epoch and seq (unchanged by the removal)",
            wrap(ops.remove_snapshot),
        ),
        Operation(
            names.SUBJECTS_UNSUBSCRIBE,
            [("id", "java.lang.String", "Session id"), subject],
            "boolean",
            "End one session's subscription (it gets unsubscribed); false if it had none",
            wrap(ops.unsubscribe),
        ),
    ]


def configuration(settings: Settings) -> dict[str, Any]:
    """The effective settings by their pushgrid.conf names, secrets hidden
    (pushgrid/kernel/redaction.py: by key pattern, and credentials inside URLs and DSNs);
    non-scalar values as their text (the ``Configuration`` attribute outside clients read)."""
    scalar = (int, float, bool, str, type(None))
    return {
        key: value if isinstance(value, scalar) else str(value)
        for key, value in typed_settings(settings).items()
    }


def typed_settings(settings: Settings) -> dict[str, Any]:
    """The same settings with their own types (lists stay lists), secrets hidden."""
    out: dict[str, Any] = {}
    for field, info in type(settings).model_fields.items():
        key = info.alias or field
        out[key] = redact_setting(key, getattr(settings, field))
    return out


def settings_document(settings: Settings) -> dict[str, Any]:
    """:func:`typed_settings` as the ``Settings`` attribute serves it: a list as
    ``pushgrid.ops.server.list_text`` (readable over the JMX bridge too), a path as its text."""
    return {key: _served(value) for key, value in typed_settings(settings).items()}


def _served(value: Any) -> Any:
    if isinstance(value, int | float | bool | str | None):
        return value
    if isinstance(value, list | tuple):
        return list_text([str(item) for item in value])
    return str(value)


_RANKING_TEXT = "subject, value, error bound, history (last 60 s), largest first"


def _ranking(name: str) -> Callable[[ReadModel], Any]:
    return lambda m: m.hot["rankings"][name]


HOT_ROWS: tuple[ModelRow, ...] = (
    ("TopN", "int", "Subjects per ranking (HotSubjects.TopN)", lambda m: m.hot["top_n"]),
    ("Capacity", "int", "Counters per sketch", lambda m: m.hot["capacity"]),
    ("Window", "double", "Rate averaging time constant (s)", lambda m: m.hot["window"]),
    ("SampleTime", "long", "UTC second of the last fold", lambda m: m.hot["ts"]),
    (
        "IncomingMessages",
        "java.util.List",
        f"By incoming messages/s: {_RANKING_TEXT}",
        _ranking("messages_in"),
    ),
    (
        "OutgoingMessages",
        "java.util.List",
        f"By outgoing messages/s: {_RANKING_TEXT}",
        _ranking("messages_out"),
    ),
    (
        "OutgoingBytes",
        "java.util.List",
        f"By outgoing bytes/s: {_RANKING_TEXT}",
        _ranking("bytes_out"),
    ),
    (
        "Subscribers",
        "java.util.List",
        "By local subscribers (exact): subject, value",
        _ranking("subscribers"),
    ),
    (
        "ErrorBounds",
        "java.util.Map",
        "Largest over-estimate of any rate, per ranking",
        lambda m: m.hot["error_bounds"],
    ),
    ("Document", "java.util.Map", "Everything above", lambda m: m.hot),
)


def hot_subjects_bean(tables: _Tables) -> MBean:
    name = ObjectName.parse(names.HOT_SUBJECTS)
    return MBean(name, "Hot subjects", tables.model(HOT_ROWS))


def member_panel_bean(tables: _Tables) -> MBean:
    def document(s: LiveState) -> PanelAttributes:
        return PanelAttributes.of(s.panel)

    name = ObjectName.parse(names.MEMBER_PANEL)
    return MBean(name, "The operator's member panel", tables.document(document))


WATCHED_ROWS: tuple[ModelRow, ...] = (
    (
        "MaxPatterns",
        "int",
        "Most patterns watched at once (WatchedSubjects.MaxPatterns)",
        lambda m: m.watched.get("max_patterns", 0),
    ),
    (
        "Patterns",
        "java.util.List",
        "Watched patterns, in the order they were added",
        lambda m: [p["pattern"] for p in m.watched.get("patterns", ())],
    ),
    (
        "Summary",
        "java.util.List",
        "Per pattern: totals, subscribers, subjects and the last per-second rates",
        summary,
    ),
    (
        "Document",
        "java.util.Map",
        "Everything, with each indicator's twelve windows",
        lambda m: m.watched,
    ),
)


def watched_subjects_bean(tables: _Tables, ops: Operations) -> MBean:
    """Read-model rows; the operations change the watchlist on the event loop (the admin API
    calls them, role-checked and audited)."""
    wrap = tables.bridge.wrap
    pattern = [("pattern", "java.lang.String", "Subject pattern (/Stocks/NYSE/*)")]
    operations = [
        Operation(
            names.WATCH,
            pattern,
            "java.util.Map",
            "Start watching a pattern: {pattern, watched: true} or {pattern, error, detail}",
            wrap(ops.watch),
        ),
        Operation(
            names.UNWATCH,
            pattern,
            "java.util.Map",
            "Stop watching a pattern: {pattern, watched: false} or {pattern, error, detail}",
            wrap(ops.unwatch),
        ),
    ]
    name = ObjectName.parse(names.WATCHED_SUBJECTS)
    return MBean(name, "Watched subjects", tables.model(WATCHED_ROWS), operations)
