"""The admin API's canary probes (issue 33 item 3, ADR 049): one real WebSocket subscriber on
each member's client port, following ``/pushgrid/canary`` like any client would.

The members follow each other's canaries inside the server (server/canary.py); a probe sees them
from outside, through the client port, the member's write path and a real socket: the admin
API's own view of each member's delivery (black box). Its token is the member's probe key (the
Canary MBean's ``probeKey`` operation, read with the member's monitoring credentials), so its
session is *internal*: not counted as a user anywhere, listed by the sessions routes only with
``internal=true``. Every ``REFRESH`` seconds the probes follow the member list (members found
through the cluster's views included): a new member gets a probe, a gone one loses it, and a
member whose client URL or probe key changed (a restart) gets a new one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import httpx

from pushgrid.client import Message, PushgridClient
from pushgrid.metrics.canary import STALE_AFTER
from pushgrid.ops import names
from pushgrid.ops.cluster import ClusterDocument

from .answering import Answering
from .member_client import MemberClient, MemberEndpoint, MemberFailure, new_http_client
from .schemas_canary import CanaryProbeOut
from .services.cluster import cluster_views, with_discovered

log = logging.getLogger("pushgrid.admin")

CANARY_SUBJECT: Final = "/pushgrid/canary"  # server/canary.py (the admin API never imports it)
REFRESH: Final = 5.0  # seconds between two looks at the member list
_ANY_HOST: Final = frozenset({"0.0.0.0", "::", "[::]", ""})


def client_url(member: MemberEndpoint, view: ClusterDocument | None) -> str | None:
    """The member's first client URL from its own view; a wildcard host is the host the admin
    API reaches its monitoring port at."""
    me = None if view is None else next((m for m in view.members if m.is_self), None)
    if me is None or not me.client_urls:
        return None
    url = urlsplit(me.client_urls[0])
    if url.hostname is None or url.hostname in _ANY_HOST:
        host = urlsplit(member.monitor_url).hostname or "127.0.0.1"
        url = url._replace(netloc=f"{host}:{url.port}" if url.port else host)
    return urlunsplit(url)


@dataclass
class Probe:
    """One member's probe: its client and what it received."""

    member: str
    url: str
    key: str
    client: PushgridClient | None = None
    started: float = field(default_factory=time.time)
    last: float = 0.0  # arrival of the last canary (0.0: none yet)
    latency: float | None = None
    received: int = 0

    def on_message(self, message: Message) -> None:
        try:
            sent = float(message.fields["sent"])
        except (KeyError, ValueError):
            return
        self.last = time.time()
        self.latency = max(0.0, self.last - sent)
        self.received += 1

    def view(self, now: float) -> CanaryProbeOut:
        age = None if self.last == 0.0 else round(max(0.0, now - self.last), 3)
        connected = self.client is not None and self.client.connected
        return CanaryProbeOut(
            member=self.member,
            connected=connected,
            url=self.url,
            age_seconds=age,
            latency_seconds=None if self.latency is None else round(self.latency, 6),
            received=self.received,
            stale=now - (self.last or self.started) > STALE_AFTER,
        )

    async def open(self) -> None:
        self.client = PushgridClient(
            self.url, token=self.key, on_message=self.on_message, proxy=None, compression=False
        )
        await self.client.connect(wait=False)
        await self.client.subscribe(CANARY_SUBJECT)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


class CanaryProbes:
    """The probes of every member, kept in step with the member list."""

    def __init__(
        self,
        members: Callable[[], list[MemberEndpoint]],
        allow: Sequence[str] = (),
        answering: Answering | None = None,
    ) -> None:
        self._members, self._allow, self._answering = members, allow, answering
        self.probes: dict[str, Probe] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop following and close every probe (each client says goodbye, code 1000)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        probes, self.probes = list(self.probes.values()), {}
        for probe in probes:
            await probe.close()

    def views(self) -> list[CanaryProbeOut]:
        now = time.time()
        return [probe.view(now) for _, probe in sorted(self.probes.items())]

    async def _run(self) -> None:
        while True:
            try:
                async with new_http_client(answering=self._answering) as http:
                    listed = await asyncio.to_thread(self._members)  # a store read
                    known = await with_discovered(http, listed, self._allow)
                    views = await cluster_views(http, known)
                    await self.follow(http, known, views)
            except Exception:  # the next look tries again; a probe never stops the admin API
                log.warning("canary probes: refresh failed", exc_info=True)
            await asyncio.sleep(REFRESH)

    async def follow(
        self,
        http: httpx.AsyncClient,
        members: Sequence[MemberEndpoint],
        views: Sequence[ClusterDocument | None],
    ) -> None:
        """Open, keep or replace each member's probe; close those of members no longer listed."""
        wanted = {m.name: (m, client_url(m, v)) for m, v in zip(members, views, strict=True)}
        for name in [n for n in self.probes if n not in wanted]:
            await self.probes.pop(name).close()
        for name, (member, url) in wanted.items():
            if url is None:
                continue  # not readable now: an existing probe keeps going (and reconnecting)
            try:
                key = await MemberClient(http, member).execute(names.CANARY, names.CANARY_PROBE_KEY)
            except MemberFailure:
                continue
            current = self.probes.get(name)
            if current is not None and (current.url, current.key) == (url, str(key)):
                continue
            if current is not None:
                await current.close()
            probe = self.probes[name] = Probe(name, url, str(key))
            await probe.open()
