"""This member's link to the cluster's NATS: its own node (embedded mode), the connection, and
the membership heartbeats. Engines built on NATS share one link."""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import nats
from msgspec.structs import replace
from nats.aio.client import Client as Nats
from nats.aio.msg import Msg

from .announcement import Announcement
from .credentials import CLIENT_USER, SIGNATURE_HEADER, BusCredentials
from .errors import ClusterError
from .membership import Membership
from .natsnode import NatsNode
from .status import MemberView
from .topology import BusOptions, Topology

log = logging.getLogger(__name__)


class ClusterLink:
    def __init__(
        self,
        name: str,
        mode: str,
        topology: Topology | None,
        node: NatsNode | None,
        urls: list[str],
        credentials: BusCredentials,
    ) -> None:
        self.name = name
        self.mode = mode
        self.topology = topology
        self.node = node
        self._urls = urls
        self._credentials = credentials
        self._announcement = Announcement(
            name=name,
            index=topology.own_index if topology is not None else 0,
            fingerprint=topology.fingerprint() if topology is not None else "",
            client_urls=[],
            monitor_urls=[],
            mode=mode,
            started=time.time(),
        )
        self._nc: Nats | None = None
        self._membership: Membership | None = None
        self._closing = False  # closing on purpose: a disconnection then is no news
        self.forged = 0  # member messages (not membership) dropped for a bad signature

    @property
    def nc(self) -> Nats:
        if self._nc is None:
            raise ClusterError("the cluster link is not started")
        return self._nc

    @property
    def connected(self) -> bool:
        return self._nc is not None and self._nc.is_connected

    async def start(self) -> None:
        urls = self._urls
        login: dict[str, Any] = {}
        if self.node is not None:
            await self.node.start()
            urls = [self.node.client_url]
            # Our own node only, never anonymous (NatsServers URLs carry their own login).
            login = {"user": CLIENT_USER, "password": self._credentials.client_password}
            tls = self._client_tls(self.node.bus)
            if tls is not None:
                login["tls"] = tls
        try:
            self._nc = await nats.connect(
                servers=urls,
                **login,
                name=f"pushgrid {self.name}",
                connect_timeout=2,
                reconnect_time_wait=0.25,
                max_reconnect_attempts=-1,
                ping_interval=2,
                max_outstanding_pings=2,
                error_cb=self._on_error,
                disconnected_cb=self._on_disconnected,
                reconnected_cb=self._on_reconnected,
            )
        except Exception as exc:
            raise ClusterError(f"NatsServers: cannot connect to {', '.join(urls)}: {exc}") from exc
        source = self.node.meta_leader if self.node is not None else None
        routes = self.node.routes if self.node is not None else None
        self._membership = Membership(
            self._nc, self._announcement, self.topology, self._credentials, source, routes
        )
        self._membership.announce(self._announcement)
        await self._membership.start()

    @staticmethod
    def _client_tls(bus: BusOptions) -> ssl.SSLContext | None:
        """TLS to our own node's client port when ``ClusterTLSCertificate`` is set: the node's
        certificate is checked against ``ClusterTLSCA`` (or is itself the trust anchor); the
        host name is not (the member connects to its own node, on the address it bound)."""
        if bus.tls_certificate is None:
            return None
        context = ssl.create_default_context(cafile=str(bus.tls_ca or bus.tls_certificate))
        context.check_hostname = False
        if bus.tls_key is not None:
            context.load_cert_chain(str(bus.tls_certificate), str(bus.tls_key))
        return context

    def advertise(self, client_urls: list[str], monitor_urls: list[str]) -> None:
        """Tell the other members where this member's clients and monitoring connect.

        A listener on every interface (``0.0.0.0``) is advertised with the host of this
        member's ``ClusterMembers`` entry, the address the others reach it at."""
        host = self.topology.me.host if self.topology is not None else None

        def reachable(urls: list[str]) -> list[str]:
            if host is None:
                return urls
            return [
                u.replace("//0.0.0.0:", f"//{host}:").replace("//[::]:", f"//{host}:") for u in urls
            ]

        self._announcement = replace(
            self._announcement,
            client_urls=reachable(client_urls),
            monitor_urls=reachable(monitor_urls),
        )
        if self._membership is not None:
            self._membership.announce(self._announcement)

    def members(self) -> tuple[MemberView, ...]:
        return self._membership.members() if self._membership is not None else ()

    def meta_leader(self) -> str | None:
        return self._membership.meta_leader() if self._membership is not None else None

    def mismatched(self) -> tuple[str, ...]:
        return tuple(sorted(self._membership.mismatched)) if self._membership else ()

    # -- signed messages between members (engine.base.MemberBus) ----------------------------

    def up_members(self) -> list[str]:
        """The names of the members whose heartbeats arrive, this one included."""
        return [m.name for m in self.members() if m.state == "up" or m.is_self] or [self.name]

    async def publish_signed(self, subject: str, data: bytes) -> None:
        """Send ``data`` to every member, signed like the membership messages."""
        headers = {SIGNATURE_HEADER: self._credentials.sign(subject, data)}
        await self.nc.publish(subject, data, headers=headers)

    async def subscribe_signed(
        self, subject: str, handler: Callable[[bytes], Awaitable[None]]
    ) -> None:
        """Hand ``handler`` what members send on ``subject``; unsigned or forged: dropped."""

        async def verified(msg: Msg) -> None:
            signature = (msg.headers or {}).get(SIGNATURE_HEADER)
            if not self._credentials.verify(subject, msg.data, signature):
                self.forged += 1
                if self.forged == 1 or self.forged % 1000 == 0:
                    log.warning("dropped %d unsigned message(s) on %s", self.forged, subject)
                return
            await handler(msg.data)

        await self.nc.subscribe(subject, cb=verified)

    async def close(self) -> None:
        self._closing = True
        if self._membership is not None:
            await self._membership.close()
        if self._nc is not None and not self._nc.is_closed:
            try:
                await self._nc.close()
            except Exception:
                log.debug("closing the NATS connection failed", exc_info=True)
        if self.node is not None:
            await self.node.stop()

    async def _on_error(self, exc: Exception) -> None:
        log.debug("NATS: %s", exc)

    async def _on_disconnected(self) -> None:
        if self._closing:
            log.debug("disconnected from NATS (stopping)")
        else:
            log.warning("lost the connection to NATS; reconnecting")

    async def _on_reconnected(self) -> None:
        log.info("reconnected to NATS")
