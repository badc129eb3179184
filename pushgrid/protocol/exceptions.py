"""The one exception tree of pushgrid: every error our code raises derives from PushgridError.

Branches are defined here; each leaf stays in the module that raises it (in parentheses). This
module imports nothing of ours, so every package may import it (metrics too). A leaf that callers
also catch as a built-in keeps that built-in as a second base (``ValueError``, ``RuntimeError``,
``ConnectionError``). Columns: the ``code`` attribute (machine-readable, stable) and
``retryable`` (see below). ``docs/errors.md`` says who raises what and how callers react;
``tests/unit/test_errors_tree.py`` checks this tree against the classes themselves.

PushgridError (pushgrid.protocol.exceptions)                       error                no
├── ConfigError (pushgrid.config.loader)                           config               no
├── PluginError (pushgrid.server.core.custom_entitlement)          plugin               no
├── ClusterError (pushgrid.server.cluster.errors)                  cluster              no
├── ProtocolError (pushgrid.protocol.exceptions)                   protocol             no
│   ├── LocalProtocolError (pushgrid.protocol.errors)              internal             yes
│   │   └── TransportStateError (pushgrid.server.transport.states) internal             yes
│   ├── RemoteProtocolError (pushgrid.protocol.errors)             per ErrorCode        per code
│   │   └── InvalidSubject (pushgrid.protocol.errors)              invalid_subject      no
│   └── HandshakeError (pushgrid.server.transport.handshake)       bad_handshake        no
├── EngineError (pushgrid.protocol.exceptions)                     engine               no
│   ├── EngineRefusal (pushgrid.server.engine.base)                per ErrorCode        no
│   │   ├── SnapshotLimitExceeded (pushgrid.server.engine.base)    per ErrorCode        no
│   │   ├── EngineUnavailable (pushgrid.server.engine.base)        engine_unavailable   yes
│   │   └── EngineFull (pushgrid.server.engine.base)               per ErrorCode        yes
│   ├── SnapshotRemovalUnsupported (pushgrid.server.engine.base)   removal_unsupported  no
│   └── MeshFrameError (pushgrid.server.workers.wire)              mesh_frame           no
├── MonitoringError (pushgrid.protocol.exceptions)                 monitoring           no
│   ├── JolokiaError (pushgrid.server.monitoring.jolokia)          jolokia              no
│   │   └── PathNotFound (pushgrid.server.monitoring.jolokia)      jolokia              no
│   ├── MalformedObjectName (pushgrid.server.monitoring.mbeans)    malformed_name       no
│   ├── InstanceAlreadyExists (pushgrid.server.monitoring.mbeans)  instance_exists      no
│   ├── JmxError (pushgrid.kernel.jmxquery)                        jmx                  per kind
│   ├── BridgeError (pushgrid.server.jmx.bridge)                   jmx_bridge           no
│   ├── RrdError (pushgrid.metrics.rrd)                            rrd                  no
│   ├── Silenced (pushgrid.admin_api.answering)                    member_silent        no
│   ├── WatchError (pushgrid.server.core.watch)                    watch                no
│   └── TraceRefused (pushgrid.server.core.tracing)                trace_refused        no
├── StatsError (pushgrid.protocol.exceptions)                      stats                no
│   ├── StoreError (pushgrid.metrics.sqlstore.engine)              store                no
│   ├── StoreBusyError (pushgrid.spark_stats.locking)              store_busy           yes
│   ├── RunRefused (pushgrid.spark_stats.jobs)                     run_refused          yes
│   ├── JobError (pushgrid.spark_stats.jobs)                       job                  no
│   └── VerifyError (pushgrid.spark_stats.verify)                  verify               no
├── ProblemError (pushgrid.admin_api.problems)                     per status           per status
│   ├── MemberFailure (pushgrid.admin_api.member_client)           member_*             per kind
│   │   └── MemberJolokiaError (pushgrid.admin_api.member_client)  member_error         no
│   └── OidcError (pushgrid.admin_api.oidc)                        per status           per status
└── ClientError (pushgrid.protocol.exceptions)                     client               no
    ├── ConnectFailed (pushgrid.client.client)                     connect_failed       no
    ├── PresenceRefused (pushgrid.client.client)                   presence_refused     no
    ├── StateError (pushgrid.client.protocol)                      client_state         no
    └── ProviderError (pushgrid.console.provider)                  provider             per status

``retryable``: the same request, repeated unchanged after a backoff, may succeed (no quorum
yet, a lock held by another run, a member or service that did not answer). ``no``: it fails
the same way until something changes (configuration, input, a bug fixed). An error that ends a
WebSocket connection agrees with ``client/closecodes.py``: LocalProtocolError closes with 1011,
whose rule reconnects; ConnectFailed follows the close codes whose rule is "stop".
"""

from __future__ import annotations

from typing import Final

# HTTP statuses worth retrying (0: no answer at all): too many requests, unavailable, timeout.
RETRYABLE_HTTP_STATUSES: Final = frozenset({0, 429, 503, 504})


class PushgridError(Exception):
    """The root. ``code``: a stable machine-readable name; ``retryable``: see the module doc."""

    code: str = "error"
    retryable: bool = False


class ProtocolError(PushgridError):
    """The wire protocol was broken: by us (Local...) or by the peer (Remote...), as in h11."""

    code = "protocol"


class EngineError(PushgridError):
    """The message engine failed a publish, a read or a subscribe."""

    code = "engine"


class MonitoringError(PushgridError):
    """Jolokia, MBeans, the JMX bridge and client, RRD charts."""

    code = "monitoring"


class StatsError(PushgridError):
    """The statistics pipeline and its SQL store."""

    code = "stats"


class ClientError(PushgridError):
    """Our clients: the Python SDK and the console's admin API client."""

    code = "client"
