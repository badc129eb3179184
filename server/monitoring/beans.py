"""The pushgrid MBeans (domain ``pushgrid``) and the Jolokia agent that serves them.

Jolokia requests are answered on a worker thread (the agent is synchronous); every getter and
operation below is marshalled onto the event loop by :class:`LoopBridge`, so it sees the same
consistent state as the rest of the server and may await the engine.

=====================================  =====================================================
ObjectName                              content
=====================================  =====================================================
pushgrid:type=Server                    identity, uptime, engine, totals, configuration
pushgrid:type=Indicator,name=<Name>     one per spec indicator: Current, Total and Max/
                                        Average/StdDev/Count per window (``Max1m`` ...)
pushgrid:type=Cache                     cache size and limits, recovery outcomes
pushgrid:type=Sessions                  Count; ops ``list()``, ``disconnect(String id)``
pushgrid:type=Subjects                  Count; ops ``snapshot(String subject)``,
                                        ``subscriberCount(String subject)``
pushgrid:type=HotSubjects               top subjects by messages in/out, bytes out and
                                        subscribers (metrics/hotsubjects.py)
=====================================  =====================================================
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from metrics.indicators import INDICATORS, Indicator
from metrics.window_spec import WINDOW_NAMES

from .. import __version__
from ..engine.base import PublishRequest
from ..protocol.errors import CloseCode
from ..protocol.subjects import subject_error
from ..protocol.wsframe import frame_payload
from .cluster_view import cluster_bean
from .jolokia import JolokiaAgent
from .mbeans import Attribute, MBean, MBeanRegistry, ObjectName, Operation

if TYPE_CHECKING:
    from ..app import PushServer

DOMAIN = "pushgrid"
_SECRET_KEYS = {
    "monitor_password",
    "entitlement_jwt_secret",
    "jmx_password",
    "jmx_tls_key_store_password",
    "jmx_tls_trust_store_password",
}


class LoopBridge:
    """Runs a callable on the event loop from a worker thread and waits for its result."""

    def __init__(self, timeout: float = 10.0) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.timeout = timeout

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def on_loop(*args: Any) -> Any:
            loop = self.loop
            if loop is None or _on_thread_of(loop):
                return function(*args)
            future = asyncio.run_coroutine_threadsafe(_call(function, args), loop)
            return future.result(self.timeout)

        return on_loop


async def _call(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    result = function(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _on_thread_of(loop: asyncio.AbstractEventLoop) -> bool:
    thread_id = getattr(loop, "_thread_id", None)
    return thread_id == threading.get_ident()


def build_agent(app: PushServer) -> JolokiaAgent:
    registry = MBeanRegistry()
    bridge = app.loop_bridge
    for mbean in _server_beans(app, bridge):
        registry.register(mbean)
    return JolokiaAgent(
        registry,
        agent_id=f"pushgrid-{app.settings.server_name}",
        version=__version__,
        extra_info={"server": app.settings.server_name},
    )


def _attr(
    bridge: LoopBridge, name: str, type_: str, description: str, getter: Callable[[], Any]
) -> Attribute:
    return Attribute(name, type_, description, bridge.wrap(getter))


def _server_beans(app: PushServer, bridge: LoopBridge) -> list[MBean]:
    return [
        _server_bean(app, bridge),
        *(_indicator_bean(app, bridge, indicator) for indicator in INDICATORS),
        _cache_bean(app, bridge),
        _sessions_bean(app, bridge),
        _subjects_bean(app, bridge),
        cluster_bean(app, bridge.wrap),
        _hot_subjects_bean(app, bridge),
    ]


def _server_bean(app: PushServer, bridge: LoopBridge) -> MBean:
    counters = app.counters
    attributes = [
        _attr(
            bridge,
            "ServerName",
            "java.lang.String",
            "ServerName setting",
            lambda: app.settings.server_name,
        ),
        _attr(bridge, "Version", "java.lang.String", "pushgrid version", lambda: __version__),
        _attr(bridge, "Uptime", "double", "Seconds since start", app.uptime),
        _attr(
            bridge,
            "StartTime",
            "long",
            "Start time, ms since the Unix epoch",
            lambda: int(app.started_at * 1000),
        ),
        _attr(bridge, "Engine", "java.lang.String", "Message engine", lambda: app.engine.name),
        _attr(
            bridge, "DeliveryMode", "java.lang.String", "Cluster delivery mode", app.delivery_mode
        ),
        _attr(
            bridge,
            "ConnectedUsers",
            "long",
            "Connected users (sessions)",
            lambda: counters.sessions,
        ),
        _attr(
            bridge, "Subscriptions", "long", "Active subscriptions", lambda: counters.subscriptions
        ),
        _attr(
            bridge, "Counters", "java.util.Map", "Cumulative totals since start", counters.as_dict
        ),
        _attr(
            bridge,
            "Configuration",
            "java.util.Map",
            "Effective settings (secrets hidden)",
            lambda: _configuration(app),
        ),
    ]
    return MBean(ObjectName.of(DOMAIN, type="Server"), "The pushgrid server", attributes)


def _indicator_bean(app: PushServer, bridge: LoopBridge, indicator: Indicator) -> MBean:
    sampler = app.sampler
    name = indicator.name

    def window_value(window: str, stat: str) -> Callable[[], Any]:
        def read() -> Any:
            moments = sampler.window_stats()[name][window]
            if stat == "count":
                return moments.count
            if moments.count == 0:
                return None
            return {"max": moments.max, "avg": moments.mean, "stddev": moments.stddev}[stat]

        return read

    attributes = [
        _attr(
            bridge,
            "Description",
            "java.lang.String",
            "What is measured",
            lambda: indicator.description,
        ),
        _attr(bridge, "Unit", "java.lang.String", "Unit", lambda: indicator.unit),
        _attr(
            bridge,
            "Current",
            "double",
            "Last per-second sample",
            lambda: sampler.latest.values[name],
        ),
        _attr(
            bridge, "SampleTime", "long", "UTC second of the last sample", lambda: sampler.latest.ts
        ),
        _attr(
            bridge,
            "Total",
            "long",
            "Underlying counter (cumulative for rates)",
            lambda: getattr(app.counters, indicator.counter),
        ),
        _attr(
            bridge,
            "Windows",
            "java.util.Map",
            "max/avg/stddev/count per window",
            lambda: _windows(app, name),
        ),
    ]
    labels = {"max": "Max", "avg": "Average", "stddev": "StdDev", "count": "Count"}
    for window in WINDOW_NAMES:
        for stat, label in labels.items():
            kind = "long" if stat == "count" else "double"
            text = f"{label} over the last {window}"
            attributes.append(
                _attr(bridge, f"{label}{window}", kind, text, window_value(window, stat))
            )
    object_name = ObjectName.of(DOMAIN, type="Indicator", name=indicator.mbean)
    return MBean(object_name, indicator.description, attributes)


def _windows(app: PushServer, name: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for window, moments in app.sampler.window_stats()[name].items():
        empty = moments.count == 0
        out[window] = {
            "max": None if empty else moments.max,
            "avg": None if empty else moments.mean,
            "stddev": None if empty else moments.stddev,
            "count": moments.count,
        }
    return out


def _cache_bean(app: PushServer, bridge: LoopBridge) -> MBean:
    counters = app.counters
    attributes = [
        _attr(
            bridge,
            "Subjects",
            "long",
            "Subjects known to the engine",
            lambda: app.engine.stats().subjects,
        ),
        _attr(
            bridge,
            "CachedMessages",
            "long",
            "Messages in the cache",
            lambda: app.engine.stats().cached_messages,
        ),
        _attr(
            bridge,
            "CachedBytes",
            "long",
            "Bytes of cached messages",
            lambda: app.engine.stats().cached_bytes,
        ),
        _attr(
            bridge,
            "MaxCachedMessagesPerSubject",
            "long",
            "Cache limit per subject",
            lambda: app.settings.max_cached_messages_per_subject,
        ),
        _attr(
            bridge,
            "CacheExpireTime",
            "double",
            "Seconds a message stays cached",
            lambda: app.settings.cache_expire_time,
        ),
        _attr(
            bridge,
            "RecoverySuccesses",
            "long",
            "Recoveries answered from the cache",
            lambda: counters.recovery_successes_total,
        ),
        _attr(
            bridge,
            "RecoveryFailures",
            "long",
            "Recoveries that needed a resync",
            lambda: counters.recovery_failures_total,
        ),
    ]
    return MBean(ObjectName.of(DOMAIN, type="Cache"), "Message cache", attributes)


def session_info(app: PushServer) -> list[dict[str, Any]]:
    out = []
    for session in app.hub.sessions.values():
        peer = session.peer
        out.append(
            {
                "id": session.id,
                "remote": session.remote,
                "connected_since": int(session.connected_at * 1000),
                "subjects": list(session.subjects),
                "messages_in": session.messages_in,
                "bytes_in": getattr(peer, "bytes_in", 0),
                "bytes_out": getattr(peer, "bytes_out", 0),
            }
        )
    return out


def _outbound_bytes(peer: object) -> int:
    transport = getattr(peer, "transport", None)
    size = getattr(transport, "get_write_buffer_size", None)
    queued = sum(len(frame) for frame in getattr(peer, "_outbox", ()))
    return queued + (int(size()) if callable(size) else 0)


def _frame_info(at: float, frame: bytes) -> dict[str, Any]:
    """One recorded WebSocket frame: time (ms), payload size, payload text (cut at 2 KiB)."""
    payload = frame_payload(frame)
    return {
        "at": int(at * 1000),
        "size": len(payload),
        "text": payload[:2048].decode("utf-8", "replace"),
    }


def session_detail(app: PushServer, session_id: str, keep: int = 20) -> dict[str, Any] | None:
    """One session for the live trace; from now on its last ``keep`` frames are recorded."""
    session = app.hub.sessions.get(session_id)
    if session is None:
        return None
    recorded = app.hub.watch(session, keep)
    (info,) = [i for i in session_info(app) if i["id"] == session_id]
    info["outbound_buffer_bytes"] = _outbound_bytes(session.peer)
    info["last_frames"] = [_frame_info(at, frame) for at, frame in recorded]
    return info


def disconnect_session(app: PushServer, session_id: str) -> bool:
    session = app.hub.sessions.get(session_id)
    if session is None:
        return False
    session.peer.close(CloseCode.DISCONNECTED_BY_OPERATOR, "disconnected by operator")
    return True


def _sessions_bean(app: PushServer, bridge: LoopBridge) -> MBean:
    counters = app.counters
    attributes = [
        _attr(bridge, "Count", "long", "Connected sessions", lambda: counters.sessions),
        _attr(
            bridge,
            "SlowConsumerDisconnects",
            "long",
            "Sessions closed as slow consumers",
            lambda: counters.slow_consumer_disconnects_total,
        ),
        _attr(
            bridge,
            "KeepaliveTimeouts",
            "long",
            "Sessions closed for silence",
            lambda: counters.keepalive_timeouts_total,
        ),
    ]
    operations = [
        Operation(
            "list",
            [],
            "java.util.List",
            "Every session: id, remote, connected_since (ms), subjects, messages_in, "
            "bytes_in, bytes_out",
            bridge.wrap(lambda: session_info(app)),
        ),
        Operation(
            "detail",
            [("id", "java.lang.String", "Session id")],
            "java.util.Map",
            "One session with its outbound buffer and last frames (recording starts at the "
            "first call); null if unknown",
            bridge.wrap(lambda session_id: session_detail(app, session_id)),
        ),
        Operation(
            "disconnect",
            [("id", "java.lang.String", "Session id")],
            "boolean",
            "Close a session with code 4003; false if unknown",
            bridge.wrap(lambda session_id: disconnect_session(app, session_id)),
        ),
    ]
    return MBean(ObjectName.of(DOMAIN, type="Sessions"), "Client sessions", attributes, operations)


async def subject_snapshot(app: PushServer, subject: str) -> dict[str, Any] | None:
    reason = subject_error(subject)
    if reason is not None:
        raise ValueError(f"invalid subject {subject!r}: {reason}")
    snapshot = await app.engine.snapshot(subject)
    if snapshot is None:
        return None
    return {
        "subject": snapshot.subject,
        "content": snapshot.content,
        "fields": snapshot.fields,
        "epoch": snapshot.epoch,
        "seq": snapshot.seq,
        "ts": snapshot.ts,
    }


def _subjects_bean(app: PushServer, bridge: LoopBridge) -> MBean:
    attributes = [
        _attr(
            bridge,
            "Count",
            "long",
            "Subjects known to the engine",
            lambda: app.engine.stats().subjects,
        ),
        _attr(
            bridge,
            "Subscribed",
            "long",
            "Subjects with at least one local subscriber",
            lambda: sum(1 for _ in app.hub.subjects()),
        ),
        _attr(
            bridge,
            "Subscriptions",
            "long",
            "Active subscriptions",
            lambda: app.counters.subscriptions,
        ),
    ]
    operations = [
        Operation(
            "snapshot",
            [("subject", "java.lang.String", "Subject")],
            "java.util.Map",
            "Snapshot of a subject (null if none)",
            bridge.wrap(lambda subject: subject_snapshot(app, subject)),
        ),
        Operation(
            "subscriberCount",
            [("subject", "java.lang.String", "Subject")],
            "int",
            "Local subscribers of a subject",
            bridge.wrap(lambda subject: app.hub.subscriber_count(subject)),
        ),
        Operation(
            "publishAlert",
            [
                ("summary", "java.lang.String", "The alert's summary (the content)"),
                ("fields", "java.util.Map", "rule, target, state, severity, value, ..."),
            ],
            "long",
            "Publish an alert on /pushgrid/alerts (a server-owned subject: clients may not)",
            bridge.wrap(lambda summary, fields: publish_alert(app, summary, fields)),
        ),
    ]
    return MBean(ObjectName.of(DOMAIN, type="Subjects"), "Subjects", attributes, operations)


ALERTS_SUBJECT = "/pushgrid/alerts"


async def publish_alert(app: PushServer, summary: str, fields: Any) -> int:
    """The admin API's alert announcement: retained, qos standard, on the server's own subject
    (reached only through the authenticated monitoring port); returns its seq."""
    values = {str(k): "" if v is None else str(v) for k, v in dict(fields or {}).items()}
    request = PublishRequest(ALERTS_SUBJECT, str(summary), values, True, "standard")
    return (await app.engine.publish(request)).seq


def _configuration(app: PushServer) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, info in type(app.settings).model_fields.items():
        value = getattr(app.settings, field)
        if field in _SECRET_KEYS and value is not None:
            value = "********"
        out[info.alias or field] = (
            value if isinstance(value, (int, float, bool, str, type(None))) else str(value)
        )
    return out


def _hot_subjects_bean(app: PushServer, bridge: LoopBridge) -> MBean:
    hot = app.hot_subjects
    ranking_text = "subject, value, error bound, history (last 60 s), largest first"
    attributes = [
        _attr(bridge, "TopN", "int", "Subjects per ranking (HotSubjects.TopN)", lambda: hot.top_n),
        _attr(bridge, "Capacity", "int", "Counters per sketch", lambda: hot.capacity),
        _attr(bridge, "Window", "double", "Rate averaging time constant (s)", lambda: hot.window),
        _attr(bridge, "SampleTime", "long", "UTC second of the last fold", lambda: hot.ts),
        _attr(
            bridge,
            "IncomingMessages",
            "java.util.List",
            f"By incoming messages/s: {ranking_text}",
            lambda: hot.ranking("messages_in"),
        ),
        _attr(
            bridge,
            "OutgoingMessages",
            "java.util.List",
            f"By outgoing messages/s: {ranking_text}",
            lambda: hot.ranking("messages_out"),
        ),
        _attr(
            bridge,
            "OutgoingBytes",
            "java.util.List",
            f"By outgoing bytes/s: {ranking_text}",
            lambda: hot.ranking("bytes_out"),
        ),
        _attr(
            bridge,
            "Subscribers",
            "java.util.List",
            "By local subscribers (exact): subject, value",
            lambda: hot.ranking("subscribers"),
        ),
        _attr(
            bridge,
            "ErrorBounds",
            "java.util.Map",
            "Largest over-estimate of any rate, per ranking",
            lambda: {
                name: hot.error_bound(name) for name in ("messages_in", "messages_out", "bytes_out")
            },
        ),
        _attr(bridge, "Document", "java.util.Map", "Everything above", hot.document),
    ]
    return MBean(ObjectName.of(DOMAIN, type="HotSubjects"), "Hot subjects", attributes)
