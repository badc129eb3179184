"""The push server process: wires settings, engine, hub and listeners, and runs them."""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import secrets
import signal
import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from typing import Any

from pushgrid import __version__
from pushgrid.config import (
    AccessSettings,
    ConfigError,
    ListenerSettings,
    MonitoringSettings,
    Settings,
)
from pushgrid.kernel.throttle import AuthThrottle
from pushgrid.metrics.archive import DELIVERY, SAMPLES, WATCHED, ArchiveWriter
from pushgrid.metrics.canary import CanaryState
from pushgrid.metrics.counters import Counters
from pushgrid.metrics.health import ArchiveState, member_transitions
from pushgrid.metrics.hotsubjects import HotSubjectSketches
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.member_panel import server_panel
from pushgrid.metrics.readmodel import ReadModel
from pushgrid.metrics.sampler import Sampler
from pushgrid.metrics.watched import WATCH_NAMES
from pushgrid.ops.accounting import EMPTY_ACCOUNTING, AccountingDocument
from pushgrid.ops.panel import MemberPanel
from pushgrid.protocol.codec import Limits
from pushgrid.protocol.errors import CloseCode
from pushgrid.protocol.frames import Keepalive

from .canary import PROBE_ENTITLEMENT, CanaryService
from .cluster.isolation import IsolationChange, IsolationDetector, cluster_loss
from .cluster.status import ClusterStatus, assessed, standalone_status
from .core.accounting import DeliveryAccounts
from .core.custom_entitlement import CustomEntitlement, load_plugin
from .core.deltas import DeltaLimits
from .core.entitlement import AllowAll, Entitlement, JwtEntitlement
from .core.hub import Hub, Peer
from .core.publishing import Admission, PublishGuard, PublishLimits
from .core.session import Session, SessionPolicy
from .core.slow_consumers import ClosedSlowConsumer
from .core.watch import WatchFeed, Watchlist
from .engine.base import Deliver, Engine
from .engine.registry import build_engine
from .fault_points import DeliveryWedge
from .framing.outframe import OutFrame
from .monitoring.accounting_view import read_accounting
from .monitoring.beans import build_agent
from .monitoring.delivery_view import (
    ARCHIVE_COLUMNS,
    ARCHIVE_KEYS,
    NO_DELIVERY,
    archive_lines,
    read_delivery,
)
from .monitoring.loop_bridge import LoopBridge
from .monitoring.meta import publish_event, publish_meta_subjects, slow_consumer_event
from .monitoring.operations import ServerOperations
from .monitoring.ports import NO_DEFLATE, DeflateStats, LiveState, WorkerRow
from .monitoring.probe import PanelProbe
from .monitoring.prometheus_exporter import build_registry
from .monitoring.routes import Boundary, MonitorRoutes
from .occupancy import OccupancyService
from .occupancy_relay import ClusterWorkerBus
from .rlimits import raise_open_file_limit
from .transport import http, timers
from .transport.connection import Connection
from .transport.context import Batching, Deflate, TransportLimits
from .transport.flusher import Flusher
from .transport.http_protocol import HttpConnection, MonitorConnection, MonitorLimits
from .transport.limits import PendingConnections, SecurityCounters
from .transport.timers import KeepalivePolicy
from .transport.tls import TlsFiles, TlsPolicy, server_context
from .transport.wheel import ConnectionSet
from .workers.address_rate import SharedAddressBuckets, share_spent
from .workers.delivery_share import ARCHIVE_SETTLE, DeliveryShipper
from .workers.delivery_share import absorb as absorb_delivery
from .workers.engine import WorkersEngine
from .workers.heartbeat import heartbeat
from .workers.supervisor import WorkerPlan
from .workers.tally_share import ShippedAway, TallyShipper
from .workers.totals import WorkerTotals, own_report, report_to_worker_zero
from .workers.wire import WorkerReport

log = logging.getLogger(__name__)

_ISOLATION_CHECK_PERIOD = 0.25  # seconds between two looks at the cluster
_ISOLATED_REASON = "this member lost its cluster: reconnect to another server, recover"


def _addresses(servers: list[asyncio.Server]) -> list[str]:
    out = []
    for server in servers:
        for sock in server.sockets:
            host, port = sock.getsockname()[:2]
            out.append(f"{host}:{port}")
    return out


def _credentials(settings: MonitoringSettings) -> tuple[str, str] | None:
    """MonitorUsername / MonitorPassword, when both are set (the monitoring port's Basic auth)."""
    if settings.monitor_username is None or settings.monitor_password is None:
        return None
    return settings.monitor_username, settings.monitor_password


def build_entitlement(settings: AccessSettings) -> Entitlement:
    if settings.entitlement == "jwt":
        require_exp = settings.entitlement_jwt_require_exp
        if settings.entitlement_jwt_public_key_file is not None:
            key = settings.entitlement_jwt_public_key_file.read_text(encoding="utf-8")
            asymmetric = ["RS256", "RS384", "RS512", "ES256", "ES384"]
            return JwtEntitlement(key, asymmetric, require_exp)
        if settings.entitlement_jwt_secret is None:  # validation bypassed (model_construct)
            raise ConfigError(
                "Entitlement = jwt needs EntitlementJwtSecret or EntitlementJwtPublicKeyFile"
            )
        hmac = ["HS256", "HS384", "HS512"]
        return JwtEntitlement(settings.entitlement_jwt_secret, hmac, require_exp)
    if settings.entitlement.startswith("custom:"):
        name = settings.entitlement.removeprefix("custom:")
        return CustomEntitlement(
            load_plugin(name),
            settings.entitlement_custom_timeout,
            settings.entitlement_custom_cache_time,
            name,
        )
    return AllowAll()


def build_publish_guard(settings: AccessSettings) -> PublishGuard:
    limits = PublishLimits(
        rate_per_connection=settings.publish_rate_per_connection,
        rate_per_address=settings.publish_rate_per_address,
        burst=settings.publish_burst,
    )
    return PublishGuard(limits)


def build_tls_contexts(
    settings: ListenerSettings, monitoring: MonitoringSettings
) -> tuple[ssl.SSLContext | None, ssl.SSLContext | None]:
    """The contexts of the encrypted client and monitoring listeners (None: no such listener);
    ConfigError naming the key and the file when one cannot be built (server/transport/tls.py)."""
    password = settings.tls_key_password
    policy = TlsPolicy(
        key_password=password.get_secret_value() if password is not None else None,
        ciphers=settings.tls_ciphers,
        min_version=settings.tls_min_version,
    )
    client = monitor = None
    if settings.listen_encrypted:
        client = server_context(_tls_files(settings, None), policy)
    if monitoring.monitor_https_listen:
        monitor = server_context(_tls_files(settings, monitoring), policy)
    return client, monitor


def _tls_files(settings: ListenerSettings, monitor: MonitoringSettings | None) -> TlsFiles:
    """The certificate and key of a listener (``monitor``: the monitoring port's), named by the
    keys they come from (the monitoring port's default to TLSCertificate / TLSKey)."""
    certificate, certificate_setting = settings.tls_certificate, "TLSCertificate"
    key, key_setting = settings.tls_key, "TLSKey"
    if monitor is not None and monitor.monitor_tls_certificate is not None:
        certificate, certificate_setting = monitor.monitor_tls_certificate, "MonitorTLSCertificate"
    if monitor is not None and monitor.monitor_tls_key is not None:
        key, key_setting = monitor.monitor_tls_key, "MonitorTLSKey"
    if certificate is None or key is None:  # Settings validation forbids this
        raise ConfigError(f"a TLS listener needs {certificate_setting} and {key_setting}")
    return TlsFiles(certificate, key, certificate_setting, key_setting)


def _up_members(engine: Engine) -> list[str]:
    """The cluster's members that are up, as ``engine`` sees them (a worker: worker 0's view)."""
    status = engine.cluster_status()
    return [] if status is None else [m.name for m in status.members if m.state == "up"]


class PushServer:
    """One push server node. ``start`` binds the listeners; ``stop`` closes clients with 1001."""

    def __init__(
        self,
        settings: Settings,
        engine: Engine | None = None,
        worker: WorkerPlan | None = None,
    ) -> None:
        # The composition root: each subsystem gets its part of the settings; the whole object
        # reaches only the Configuration MBean (it shows every key).
        server, cluster, monitoring = settings.server, settings.cluster, settings.monitoring
        session, transport, access = settings.session, settings.transport, settings.access
        self.server_name = server.server_name
        # one worker process of a multi-process server (Workers > 1, server/workers/): its
        # listeners come bound from the supervisor; only worker 0 serves monitoring
        self.worker = worker
        self.is_monitor = worker is None or worker.index == 0
        self.listeners = settings.listeners  # what start() binds
        self.transport_settings = transport  # the write path's tick, shutdown
        self.session_settings = session  # what the client port's endpoints and the ticker read
        self.cluster_settings = cluster
        self.monitoring_settings = monitoring
        # worker 0 of several counts for the whole server (server/workers/totals.py)
        several = worker is not None and worker.workers > 1
        self.totals = WorkerTotals() if several and self.is_monitor else None
        self.counters = self.totals or Counters()
        bounds = settings.engine_limits
        self.engine = engine or build_engine(bounds, cluster, server.server_name)
        self.hub = Hub(self.engine, self.counters)
        self.hub.delta_limits = DeltaLimits(  # delta tables are bounded like snapshots
            bounds.max_fields_per_subject, bounds.max_snapshot_size, bounds.max_retained_bytes
        )
        self.occupancy = self._occupancy(server.server_name, settings)
        self.canary = CanaryService(
            server.server_name,
            self.hub,
            self.engine,
            self._engine_cluster,
            monitoring.canary_enabled,
        )
        wedge_file = monitoring.test_wedge_delivery_file  # test only (server/fault_points.py)
        self.delivery_wedge = None if wedge_file is None else DeliveryWedge(wedge_file)
        self.engine.use_interest(self.hub.has_subscribers)  # idle-subject eviction (guarantee 9)
        self.entitlement = build_entitlement(access)
        self.admission = Admission(build_publish_guard(access), self.entitlement, self.hub)
        self.auth_throttle = AuthThrottle(
            monitoring.auth_failures_before_backoff, monitoring.auth_backoff_max
        )
        self.security = SecurityCounters()
        self.pending = PendingConnections(
            transport.max_pending_connections, transport.max_pending_connections_per_address
        )
        self.policy = SessionPolicy(
            server_name=server.server_name,
            version=__version__,
            keepalive=session.keepalive_interval,
            limits=Limits(max_message_size=session.max_message_size),
            max_subscriptions=session.max_subscriptions_per_connection,
            publish_snapshot=session.publish_snapshot_message,
        )
        self.limits = TransportLimits.from_settings(
            transport, session.max_frame_size, cluster.cluster_publish_timeout
        )
        # TLS contexts are built before anything starts: a bad file is a ConfigError (exit 2)
        self._client_tls, self._monitor_tls = build_tls_contexts(settings.listeners, monitoring)
        self.batching = Batching.from_settings(settings.batching)
        self.deflate = Deflate.from_settings(settings.deflate)
        self._publish_networks = [
            ipaddress.ip_network(n, strict=False) for n in access.publish_allow
        ]
        self.connections: ConnectionSet[Connection] = ConnectionSet()
        self._http_handler = partial(http.handle, self)
        self.started_at = time.time()
        self.sampler = Sampler(self.counters, self._archive_writer())
        self.watchlist = self._watchlist()
        # delivery accounting (core/accounting.py, ADR 054): fed the hub's tally with the patterns
        self.accounts = DeliveryAccounts(
            lambda subject: [p.pattern for p in self.watchlist.matching(subject)],
            self.monitoring_settings.accounting_max_subjects,
        )
        self.accounting_document = EMPTY_ACCOUNTING
        self.hub.slow_consumers.on_record = self._slow_consumer_event
        self.watch_feed = WatchFeed(self.hub, self.watchlist, self.accounts)
        # reports count for the watched patterns their subjects match (core/delivery.py)
        self.hub.delivery.patterns = lambda subject: [
            p.pattern for p in self.watchlist.matching(subject)
        ]
        self.delivery_reading = NO_DELIVERY
        self._delivery_archive = self._archive_writer(DELIVERY)
        self.delivery_archive_errors = 0
        self.hot_subjects = self._hot_subjects()
        self._watch_subjects()
        self.loop_bridge = LoopBridge()
        self.panel_probe = PanelProbe(
            lambda: self.flusher.delays.snapshot(),
            lambda: self.counters.slow_consumer_disconnects_total,
            self._replica_lags,
        )
        self.prometheus = build_registry(self)
        operations = ServerOperations(
            self.hub,
            self.engine,
            self.occupancy.table,
            watchlist=self.watchlist,
            presence=self.occupancy.presence,
        )
        self.operations = operations  # a worker answers worker 0's session operations
        self.jolokia = build_agent(self, operations, settings, self.loop_bridge)
        self.monitor = MonitorRoutes(
            self,
            self.jolokia,
            self.prometheus,
            self.auth_throttle,
            _credentials(monitoring),
            Boundary.of(
                monitoring.monitor_allowed_hosts,
                [h for h, _ in monitoring.monitor_addresses + monitoring.monitor_tls_addresses],
            ),
        )
        self.monitor_limits = MonitorLimits.from_settings(monitoring)
        self.tick: float = 0.0
        self.stopping = False
        self._member_states: dict[str, str] | None = None  # _watch_members' last look
        self.isolation_detector = IsolationDetector(cluster.cluster_isolation_timeout)
        self.flusher: Flusher
        self._servers: list[asyncio.Server] = []
        self._monitor_servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopped = asyncio.Event()

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.flusher = Flusher(loop, self.transport_settings.flush_tick / 1000.0)
        old_files, files = raise_open_file_limit()
        log.info("open-file limit %d (soft limit was %d)", files, old_files)
        self.loop_bridge.bind(loop)
        self.tick = loop.time()
        # a worker beats "starting" while its engine starts (a cluster engine may wait for its
        # quorum), "running" once it has (server/workers/heartbeat.py)
        started = asyncio.Event()
        if self.worker is not None:
            self.track(loop.create_task(heartbeat(self.worker.control, started)))
        await self.engine.start(self._deliver())
        started.set()
        if self.worker is not None:
            await self._start_worker(loop, self.worker)
        else:
            await self._start_listeners(loop)
        await self._start_monitoring(loop)
        self.engine.advertise(
            [f"ws://{a}/ws" for a in self.bound_addresses()],
            [f"http://{a}" for a in self.monitor_addresses()],
        )
        self.track(loop.create_task(self._ticker()))
        if self.cluster_settings.cluster_isolation_timeout > 0:
            self.track(loop.create_task(self._watch_cluster()))
        log.info(
            "pushgrid %s %slistening on %s (engine %s); monitoring on %s",
            __version__,
            "" if self.worker is None else f"worker {self.worker.index}/{self.worker.workers} ",
            ", ".join(self.bound_addresses()),
            self.engine.name,
            ", ".join(self.monitor_addresses()) or "none",
        )

    async def _start_worker(self, loop: asyncio.AbstractEventLoop, plan: WorkerPlan) -> None:
        """A worker serves the listeners the supervisor bound for it (its heart beats since
        start: waiting for its engine and its peers is alive)."""
        engine = self.engine
        if isinstance(engine, WorkersEngine):
            await engine.wait_for_peers()  # clients are served by a whole mesh
            engine.totals = self.totals
            self._share_publish_rate(engine)
            engine.operate = self.operations.local_operation
            self.operations.owns = engine.owns
            if plan.index == 0:
                engine.reported = self._absorb_report
                self.operations.others = engine.ask_every_other
                self._fold_every_worker(engine)
            else:
                shipper = DeliveryShipper(self.hub.delivery)
                tally = self._ship_tally(engine)
                report = partial(self._report_to_worker_zero, shipper, tally)
                self.track(report_to_worker_zero(partial(engine.mesh.send, 0), report))
        backlog = self.listeners.listen_backlog
        for sock, tls in plan.listeners:
            context = self._client_tls if tls else None
            server = await loop.create_server(
                self._protocol, sock=sock, ssl=context, backlog=backlog
            )
            self._servers.append(server)

    def _own_report(self) -> WorkerReport:
        index = 0 if self.worker is None else self.worker.index
        engine = self.engine
        own = engine.inner.stats() if isinstance(engine, WorkersEngine) else engine.stats()
        panel = self.panel_probe.panel
        lag = (panel.loop_lag_seconds, panel.loop_lag_max_seconds)
        return own_report(index, self.counters, len(self.connections), own, lag)

    def _report_to_worker_zero(self, shipper: DeliveryShipper, tally: TallyShipper) -> WorkerReport:
        tally.ship()  # the second's deltas first: worker 0 reads them before the report
        report = self._own_report()
        report.delivery = shipper.shipment()
        report.panel = self.panel_probe.panel.as_dict()
        return report

    def _server_panel(self, slow_total: int) -> MemberPanel:
        """The member panel of the whole server: worker 0's folded with the others' last
        panels (one process: its own); ``slow_total``: the server's slow consumers since start."""
        own, totals = self.panel_probe.panel, self.totals
        if totals is None:
            return own
        others = [
            MemberPanel.model_validate(r.panel)
            for r in totals.reports()
            if r.panel is not None and totals.linked(r.index)
        ]
        return server_panel(own, others, slow_total)

    def _share_publish_rate(self, engine: WorkersEngine) -> None:
        """PublishRatePerAddress is the server's: each worker's buckets also pay for the
        tokens the others took (server/workers/address_rate.py)."""
        guard = self.admission.guard
        rate, burst = guard.limits.rate_per_address, guard.limits.burst
        if rate <= 0:
            return
        buckets = guard.addresses = SharedAddressBuckets(rate, burst, guard.clock)
        engine.spent = buckets.debit
        self.track(share_spent(buckets, engine.mesh.up_peers, engine.mesh.send))

    def _fold_every_worker(self, engine: WorkersEngine) -> None:
        """Worker 0: the others' per-subject deltas join its hub's, and subscriber rankings
        count the server's subscribers (the occupancy table), so hot and watched subjects
        are the server's (server/workers/tally_share.py)."""
        engine.tallied = self.hub.add_tally
        self.watch_feed.counts = self.occupancy.table.counts

    def _ship_tally(self, engine: WorkersEngine) -> TallyShipper:
        """A worker but 0: its hub's deltas go to worker 0, its own sampler folds none."""
        tally = TallyShipper(self.hub, partial(engine.mesh.send, 0))
        self.hub.on_tally_full = tally.ship
        self.watch_feed.hub = ShippedAway(self.hub)
        return tally

    def _absorb_report(self, report: WorkerReport) -> None:
        if report.delivery is not None:
            absorb_delivery(self.hub.delivery, report.delivery)

    def _worker_rows(self) -> tuple[WorkerRow, ...]:
        """Worker 0's view of the server's processes (empty with one process)."""
        if self.totals is None:
            return ()
        now = time.time()
        rows = [self._own_report(), *self.totals.reports()]
        return tuple(
            WorkerRow(
                r.index,
                r.pid,
                r.cpu_seconds,
                r.rss_bytes,
                r.connections,
                r.counters.get("sessions", 0),
                r.open_files,
                0.0 if r.index == 0 else round(max(0.0, now - r.sent_at), 3),
                r.index == 0 or self.totals.linked(r.index),
                r.loop_lag,
                r.loop_lag_max,
            )
            for r in rows
        )

    async def _start_listeners(self, loop: asyncio.AbstractEventLoop) -> None:
        # Several members on one host may share the client port: the kernel spreads the
        # connections over them (docs/cluster.md, "One host, every core").
        reuse = self.listeners.listen_reuse_port or None
        backlog = self.listeners.listen_backlog
        for host, port in self.listeners.listen_addresses:
            self._servers.append(
                await loop.create_server(
                    self._protocol, host, port, reuse_port=reuse, backlog=backlog
                )
            )
        if self._client_tls is not None:
            for host, port in self.listeners.listen_encrypted_addresses:
                server = await loop.create_server(
                    self._protocol,
                    host,
                    port,
                    ssl=self._client_tls,
                    reuse_port=reuse,
                    backlog=backlog,
                )
                self._servers.append(server)

    def _deliver(self) -> Deliver:
        """The engine's delivery callback: the hub's, behind the test-only wedge when set."""
        if self.delivery_wedge is None:
            return self.hub.deliver
        self.track(self.delivery_wedge.watch())
        return self.delivery_wedge.wrap(self.hub.deliver)

    # -- connections (server/transport/context.py: ConnectionContext) ------------------------

    def _protocol(self) -> HttpConnection:
        return HttpConnection(self, self._http_handler)

    def _monitor_protocol(self) -> MonitorConnection:
        return MonitorConnection(self, self.monitor, self.monitor_limits)

    def _occupancy(self, server_name: str, settings: Settings) -> OccupancyService:
        """Occupancy and presence between the members; a worker of several is a member of its
        own name on the mesh, shown under the server's (server/workers/member_bus.py)."""
        engine = self.engine
        if not isinstance(engine, WorkersEngine):
            bus = engine.member_bus()
            return OccupancyService(server_name, self.hub, bus, settings.occupancy, engine)
        bus = engine.bus.named(server_name)
        if engine.clustered:  # the other members too, through worker 0 (ADR 067)
            relay = ClusterWorkerBus(bus, partial(_up_members, engine), engine.inner.member_bus())
            return OccupancyService(
                bus.name, self.hub, relay, settings.occupancy, engine, relay.fold
            )
        return OccupancyService(bus.name, self.hub, bus, settings.occupancy, engine, bus.fold)

    def open_session(self, peer: Peer, token: str | None, remote: str) -> Session:
        probe = self.canary.probe_grant(token)  # the admin API's probe (ADR 049), else None
        internal = probe is not None and probe.valid  # a stale probe key is a user, refused
        session = Session(
            session_id=secrets.token_hex(8),
            hub=self.hub,
            peer=peer,
            policy=self.policy,
            grant=self.entitlement.grant(token) if probe is None else probe,
            remote=remote,
            may_publish=probe is None and self.may_publish(remote.rpartition(":")[0]),
            entitlement=PROBE_ENTITLEMENT if internal else self.entitlement,
            admission=self.admission,
            presence=self.occupancy.presence,
            internal=internal,
        )
        self.hub.add_session(session)
        return session

    def end_session(self, session: Session) -> None:
        session.close()
        self.hub.remove_session(session)

    async def _start_monitoring(self, loop: asyncio.AbstractEventLoop) -> None:
        settings = self.monitoring_settings
        if self.is_monitor:  # worker 0 serves the server's monitoring (server/workers)
            await self._start_monitor_listeners(loop)
        self.sampler.listeners.append(self._watch_members)
        self.sampler.listeners.append(self._read_delivery)
        self.sampler.listeners.append(self._read_accounting)
        self.track(loop.create_task(self.sampler.run()))
        self.track(loop.create_task(self.panel_probe.run()))
        if settings.meta_subject_interval > 0 and self.is_monitor:
            self.track(publish_meta_subjects(self, self.engine, settings.meta_subject_interval))
        self.track(self.occupancy.run())
        if self.is_monitor:  # one canary per server, whatever its worker count (ADR 049)
            self.track(self.canary.run())

    async def _start_monitor_listeners(self, loop: asyncio.AbstractEventLoop) -> None:
        settings = self.monitoring_settings
        for host, port in settings.monitor_addresses:
            server = await loop.create_server(self._monitor_protocol, host, port)
            self._monitor_servers.append(server)
        if self._monitor_tls is not None:
            for host, port in settings.monitor_tls_addresses:
                server = await loop.create_server(
                    self._monitor_protocol, host, port, ssl=self._monitor_tls
                )
                self._monitor_servers.append(server)

    def _read_delivery(self, _seconds: Sequence[int]) -> None:
        """Once a second: the delivery numbers every view reads (ADR 048)."""
        watched = set(self.watchlist.patterns)
        book = self.hub.delivery
        book.keep_patterns(watched)
        self.delivery_reading = read_delivery(book, watched)
        if not self.is_monitor:  # a worker's seconds go to worker 0 (server/workers)
            return
        archive = self._delivery_archive
        settle = 0 if self.worker is None else ARCHIVE_SETTLE
        for second in book.completed(settle):
            lines = archive_lines(second, watched)
            if archive is not None and lines:
                try:
                    archive.write_lines(second.second, lines)
                except OSError as exc:  # the archive's trouble never stops the server
                    self.delivery_archive_errors += 1
                    log.warning("delivery archive: %s", exc)

    def _slow_consumer_event(self, record: ClosedSlowConsumer) -> None:
        """A slow consumer was closed: its record on /pushgrid/<node>/slow-consumers at once
        (with the meta-subjects: not when MetaSubjectInterval is 0)."""
        if self.monitoring_settings.meta_subject_interval > 0 and self.is_monitor:
            request = slow_consumer_event(self.server_name, dataclasses.asdict(record))
            self.track(publish_event(self.engine, request))

    def _read_accounting(self, _seconds: Sequence[int]) -> None:
        """Once a second, after the watched patterns drained the tally: the accounting's
        second closes and every view reads the new document (ADR 054)."""
        self.accounts.close_second(self.watchlist.patterns)
        top = self.monitoring_settings.accounting_top_subjects
        self.accounting_document = read_accounting(self.accounts, self.server_name, top)

    def _watch_members(self, _seconds: Sequence[int]) -> None:
        """Once a second: one WARNING per member of the cluster that went down or came up."""
        states: dict[str, str] = {
            m.name: m.state for m in self.cluster_status().members if not m.is_self
        }
        for name, state in member_transitions(self._member_states, states):
            if state == "down":
                log.warning("cluster member %s is down (no heartbeat)", name)
            else:
                log.info("cluster member %s is up", name)  # a recovery: INFO
        self._member_states = states

    def _hot_subjects(self) -> HotSubjectSketches:
        settings = self.monitoring_settings
        hot = HotSubjectSketches(
            self.watch_feed,  # the hub's tally, seen by the watched patterns on its way
            top_n=settings.hot_subjects_top_n,
            capacity=settings.hot_subjects_capacity,
            window=settings.hot_subjects_window,
        )
        if settings.hot_subjects_top_n > 0:
            self.hub.tally_limit = settings.hot_subjects_capacity
            self.hub.on_tally_full = hot.absorb
            self.sampler.listeners.append(hot.fold_seconds)
        self.sampler.attach_hot(hot)
        return hot

    def _watchlist(self) -> Watchlist:
        settings = self.monitoring_settings
        watchlist = Watchlist(
            settings.watched_subjects_max_patterns, settings.watched_subjects_cache_size
        )
        for pattern in settings.watched_subjects_patterns:  # checked by the settings
            watchlist.add(pattern, "config")
        self._watched_archive = watchlist.archive = self._archive_writer(WATCHED)
        return watchlist

    def _watch_subjects(self) -> None:
        """Once a second, after the hot subjects took the hub's tally through the feed: the
        deltas left, then one reading of every watched pattern (server/core/watch.py)."""
        feed, sampler = self.watch_feed, self.sampler
        if self.monitoring_settings.hot_subjects_top_n == 0:
            self.hub.on_tally_full = feed.drain
        sampler.listeners.append(lambda _seconds: feed.read(*sampler.last_reading))
        sampler.attach_watched(self.watchlist)

    def _archive_writer(self, prefix: str = SAMPLES) -> ArchiveWriter | None:
        """The per-second archive of the seven indicators, or (``WATCHED``) of the patterns."""
        root = self.monitoring_settings.metrics_archive
        if root is None or not self.is_monitor:  # one archive per server: worker 0 writes it
            return None
        columns: Sequence[str] = INDICATOR_NAMES
        keys: tuple[str, ...] = ()
        if prefix == WATCHED:
            columns, keys = WATCH_NAMES, ("pattern",)
        elif prefix == DELIVERY:  # ADR 048: buckets as text, one line per scope and second
            columns, keys = ARCHIVE_COLUMNS, ARCHIVE_KEYS
        return ArchiveWriter(
            root,
            self.server_name,
            columns,
            retention_days=self.monitoring_settings.metrics_archive_retention,
            prefix=prefix,
            keys=keys,
        )

    # -- what the monitoring views read (server/monitoring/ports.py MonitoredNode) ------------

    def read_model(self) -> ReadModel:
        return self.sampler.read_model

    def live_state(self) -> LiveState:
        throttle, security = self.auth_throttle, self.security
        counters = self.counters.as_dict()  # once: the panel's fold reads it too
        return LiveState(
            server_name=self.server_name,
            uptime=self.uptime(),
            started_at=self.started_at,
            engine_name=self.engine.name,
            delivery_mode=self.engine.delivery_mode,
            counters=counters,
            engine=self.engine.stats(),
            refusals={
                "auth_failures": throttle.failures_total,
                "auth_throttled": throttle.throttled_total,
                "pending_refused": security.pending_refused_total,
                "protocol_errors": security.protocol_errors_total,
                "http_refused": security.http_refused_total,
                "inflating_refused": (
                    0 if self.deflate is None else self.deflate.inflating.refused_total
                ),
            },
            flush_delay=self.flusher.delays.snapshot(),
            panel=self._server_panel(counters["slow_consumer_disconnects_total"]),
            deflate=self._deflate_stats(),
            workers=self._worker_rows(),
            delivery=self.delivery_reading,
        )

    def _deflate_stats(self) -> DeflateStats:
        deflate = self.deflate
        if deflate is None:
            return NO_DEFLATE
        return DeflateStats(
            True,
            deflate.contexts,
            deflate.max_contexts,
            deflate.uncompressed_bytes,
            deflate.compressed_bytes,
        )

    def _replica_lags(self) -> dict[str, int]:
        """The JetStream stream replicas' lags this member sees (none without a stream)."""
        status = self.engine.cluster_status()
        return {} if status is None else {r.name: r.lag for r in status.replicas}

    def _engine_cluster(self) -> ClusterStatus:
        """The cluster as the engine sees it (no health yet)."""
        status = self.engine.cluster_status()
        return standalone_status(self.server_name) if status is None else status

    def cluster_status(self) -> ClusterStatus:
        status = self._engine_cluster()
        archive = self.sampler.read_model.archive
        state = ArchiveState(archive.enabled, archive.last_write, archive.last_error)
        isolated = self.isolation_detector.isolated
        now = time.time()
        stalled = self.canary.stalled_pairs(status, now)
        return assessed(status, state, now, self.stopping, isolated, stalled)

    def canary_state(self) -> CanaryState:
        return self.canary.state()

    def canary_probe_key(self) -> str:
        return self.canary.probe_key

    def accounting(self) -> AccountingDocument:
        return self.accounting_document

    def isolation(self) -> str | None:
        """Why this member refuses new sessions (it does not see its cluster), or None. An
        isolated member looks again first, so it accepts as soon as it sees its cluster."""
        if self.isolation_detector.isolated:
            self._observe_cluster()
        return self.isolation_detector.reason

    def _observe_cluster(self) -> None:
        status = self.engine.cluster_status()
        loss = cluster_loss(status) if status is not None else None
        change = self.isolation_detector.observe(
            time.monotonic(), loss, self.engine.stream_progress()
        )
        if change is IsolationChange.ISOLATED:
            sessions = [c for c in self.connections if c.session is not None]
            log.warning(
                "cut off from the cluster for %g s (%s): closing %d sessions with %d,"
                " refusing new ones",
                self.isolation_detector.timeout,
                self.isolation_detector.reason,
                len(sessions),
                CloseCode.CLUSTER_ISOLATED,
            )
            for connection in sessions:
                connection.close(CloseCode.CLUSTER_ISOLATED, _ISOLATED_REASON)
        elif change is IsolationChange.REJOINED:
            log.info("sees its cluster again: accepting sessions")  # a recovery: INFO

    async def _watch_cluster(self) -> None:
        while True:
            await asyncio.sleep(_ISOLATION_CHECK_PERIOD)
            self._observe_cluster()

    def uptime(self) -> float:
        return round(time.time() - self.started_at, 3)

    def monitor_addresses(self) -> list[str]:
        return _addresses(self._monitor_servers)

    def bound_addresses(self) -> list[str]:
        return _addresses(self._servers)

    async def stop(self) -> None:
        """Graceful shutdown: refuse new clients, close each one with 1001, wait, then abort."""
        if self.stopping:
            await self._stopped.wait()
            return
        self.stopping = True
        for server in self._servers:
            server.close()
        for connection in list(self.connections):
            connection.close(CloseCode.GOING_AWAY, "server shutting down: reconnect elsewhere")
        deadline = time.monotonic() + self.transport_settings.shutdown_timeout
        while self.connections and time.monotonic() < deadline:  # noqa: ASYNC110 - poll a set
            await asyncio.sleep(0.05)
        for connection in list(self.connections):
            connection.abort()
        for server in self._monitor_servers:
            server.close()
        self.monitor.close()
        for task in list(self._tasks):
            task.cancel()
        self.sampler.close()
        if self._watched_archive is not None:
            self._watched_archive.close()
        if self._delivery_archive is not None:
            self._delivery_archive.close()
        await self.engine.close()
        self._stopped.set()

    async def serve_forever(
        self,
        on_started: Callable[[PushServer], None] | None = None,
        before_stop: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Run until SIGTERM or SIGINT, then stop gracefully (after ``before_stop``: what
        watches this server, stopped first, sees no server going away)."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await self.start()
        if on_started is not None:
            on_started(self)
        await stop.wait()
        if before_stop is not None:
            await before_stop()
        log.info("shutting down: closing %d connections", len(self.connections))
        await self.stop()

    def track(self, task: asyncio.Task[Any] | Coroutine[Any, Any, Any]) -> None:
        if not isinstance(task, asyncio.Task):
            task = asyncio.get_running_loop().create_task(task)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        """A background task ended: an exception is logged, never lost."""
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_coro(), exc_info=task.exception())

    def may_publish(self, host: str) -> bool:
        if not self._publish_networks:
            return True
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return False
        return any(address in network for network in self._publish_networks)

    # -- periodic work ----------------------------------------------------------------------

    async def _ticker(self) -> None:
        """Keepalive, dead-peer detection and cache expiry, on one timer for all connections."""
        loop = asyncio.get_running_loop()
        session = self.session_settings
        policy = KeepalivePolicy(session.keepalive_interval, session.keepalive_timeout)
        period = min(1.0, policy.interval / 4)
        keepalive_frame = OutFrame.of(Keepalive())
        table = self.connections
        while True:
            await asyncio.sleep(period)
            self.tick = now = loop.time()
            for connection in table.due(now):  # only those whose time came (ADR 063)
                timers.check(connection, now, policy, keepalive_frame, self.counters)
                # at least once per interval: a safety net under the wakes
                later = min(timers.next_check(connection, now, policy), now + policy.interval)
                table.wake(connection, later)
            self.engine.sweep()
