"""Members find each other through heartbeats on NATS (``pg.members``, once a second).

A member is *up* while its heartbeats arrive (within ``DOWN_AFTER`` seconds). At start a member
asks who is there (``pg.hello``) and refuses to start when another member runs with a different
``ClusterMembers`` list or seed count: two halves of a cluster that disagree on the seeds would
disagree on the quorum.

Every membership message is signed (header ``Pg-Sig``: HMAC-SHA256 with a key derived from
``ClusterPassword``, bound to the message's kind); an unsigned or wrongly signed one is dropped
and counted (``forged``), so a connection to the bus without the cluster secret cannot make a
member (or the admin API behind it) believe in a member that does not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec
from msgspec.structs import replace
from nats.aio.client import Client as Nats
from nats.aio.msg import Msg

from .announcement import (
    HELLO_SUBJECT,
    MEMBERS_SUBJECT,
    Announcement,
    decode_announcement,
    encode_announcement,
)
from .credentials import SIGNATURE_HEADER, BusCredentials
from .errors import ClusterError
from .status import MemberView
from .topology import Topology

log = logging.getLogger(__name__)

HEARTBEAT = 1.0
DOWN_AFTER = 3.5
# How long a starting member waits for the members already up to answer its hello (it stops
# as soon as every other listed member has). 0.6 s was too short on a loaded machine: at load
# average 20 a member with another ClusterMembers list joined (its peers answered later) and
# only logged the mismatch from their heartbeats (test_cluster_guaranteed, 2026-11-28).
HELLO_WAIT = 2.0
# How long a starting member waits for its node's first route to another node before it says
# hello: a hello sent before the route exists reaches nobody, and a member with another
# ClusterMembers list then joined on a loaded machine (CI, 2026-11-28, after HELLO_WAIT was
# raised). Bounded: the first member of a cluster has nobody to route to.
ROUTE_WAIT = 5.0
HELLO_REPLY = "pg.hello.reply"  # the kind a hello's answer is signed as (it goes to an inbox)


@dataclass(slots=True)
class _Heard:
    announcement: Announcement
    at: float


class Membership:
    def __init__(
        self,
        nc: Nats,
        me: Announcement,
        topology: Topology | None,
        credentials: BusCredentials,
        meta_leader_source: Callable[[], Awaitable[str]] | None = None,
        routes: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self._nc = nc
        self._credentials = credentials
        self.forged = 0  # membership messages dropped for a missing or wrong signature
        self._me = me
        self._topology = topology
        self._meta_leader_source = meta_leader_source
        self._routes = routes
        self._heard: dict[str, _Heard] = {}
        self._task: asyncio.Task[None] | None = None
        self.mismatched: set[str] = set()

    def announce(self, me: Announcement) -> None:
        """Heartbeats from now on carry ``me`` (addresses are known once listeners are bound);
        the others hear the change at once, not a heartbeat later."""
        self._me = replace(me, meta_leader=self._me.meta_leader)
        if self._task is not None:
            self._task.cancel()
            self._task = asyncio.get_running_loop().create_task(self._beat())

    async def start(self) -> None:
        await self._nc.subscribe(MEMBERS_SUBJECT, cb=self._on_heartbeat)
        await self._nc.subscribe(HELLO_SUBJECT, cb=self._on_hello)
        await self._check_peers()
        self._task = asyncio.get_running_loop().create_task(self._beat())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _check_peers(self) -> None:
        """Ask the members already up; refuse to join a cluster configured differently (their
        answer to the hello, or a heartbeat heard meanwhile, carries another fingerprint)."""
        if self._topology is None:  # NatsServers without a member list: nothing to compare
            return
        others = len(self._topology.members) - 1
        if others == 0:
            return
        await self._wait_for_a_route()
        inbox = self._nc.new_inbox()
        replies = await self._nc.subscribe(inbox)
        await self._send(HELLO_SUBJECT, HELLO_SUBJECT, self._me, reply=inbox)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HELLO_WAIT
        answered: set[str] = set()
        try:
            while (remaining := deadline - loop.time()) > 0 and len(answered) != others:
                try:
                    msg = await replies.next_msg(timeout=min(remaining, 0.25))
                except TimeoutError:
                    self._refuse_if_mismatched()
                    continue
                peer = self._decode(msg, HELLO_REPLY)
                if peer is not None:
                    answered.add(peer.name)
                if peer is not None and peer.fingerprint != self._me.fingerprint:
                    self.mismatched.add(peer.name)
                self._refuse_if_mismatched()
        finally:
            await replies.unsubscribe()

    async def _wait_for_a_route(self) -> None:
        if self._routes is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ROUTE_WAIT
        while loop.time() < deadline:
            if await self._routes() > 0:
                return
            await asyncio.sleep(0.1)  # polled: nats-server tells of a new route to nobody

    def _refuse_if_mismatched(self) -> None:
        if self.mismatched:
            peer = sorted(self.mismatched)[0]
            raise ClusterError(
                f"ClusterMembers: member {peer!r} runs with a different "
                "ClusterMembers list or ClusterSeedMemberCount; every member must "
                "list the same members in the same order"
            )

    async def _on_hello(self, msg: Msg) -> None:
        peer = self._decode(msg, HELLO_SUBJECT)
        if peer is None or peer.name == self._me.name or not msg.reply:
            return
        await self._send(msg.reply, HELLO_REPLY, self._me)

    async def _on_heartbeat(self, msg: Msg) -> None:
        peer = self._decode(msg, MEMBERS_SUBJECT)
        if peer is None:
            return
        self._heard[peer.name] = _Heard(peer, time.monotonic())
        if peer.fingerprint != self._me.fingerprint and peer.name not in self.mismatched:
            self.mismatched.add(peer.name)
            log.error("member %s runs with a different ClusterMembers list", peer.name)

    async def _send(self, subject: str, kind: str, me: Announcement, reply: str = "") -> None:
        data = encode_announcement(me)
        headers = {SIGNATURE_HEADER: self._credentials.sign(kind, data)}
        await self._nc.publish(subject, data, reply=reply, headers=headers)

    def _decode(self, msg: Msg, kind: str) -> Announcement | None:
        signature = (msg.headers or {}).get(SIGNATURE_HEADER)
        if not self._credentials.verify(kind, msg.data, signature):
            self.forged += 1
            if self.forged == 1 or self.forged % 1000 == 0:
                log.warning(
                    "dropped %d membership message(s) without a valid signature on %s (a "
                    "member with another ClusterPassword, or a forgery)",
                    self.forged,
                    msg.subject,
                )
            return None
        try:
            return decode_announcement(msg.data)
        except msgspec.DecodeError:
            log.warning("ignored a malformed heartbeat on %s", msg.subject)
            return None

    async def _beat(self) -> None:
        while True:
            if self._meta_leader_source is not None:
                leader = await self._meta_leader_source()
                self._me = replace(self._me, meta_leader=leader)
            with contextlib.suppress(Exception):  # a reconnecting link drops one beat, no more
                await self._send(MEMBERS_SUBJECT, MEMBERS_SUBJECT, self._me)
            await asyncio.sleep(HEARTBEAT)

    def meta_leader(self) -> str | None:
        """The JetStream meta leader: this seed's view, else the freshest a live seed sent."""
        if self._me.meta_leader:
            return self._me.meta_leader
        now = time.monotonic()
        heard = [h for h in self._heard.values() if h.announcement.meta_leader]
        live = [h for h in heard if now - h.at <= DOWN_AFTER]
        if not live:
            return None
        return max(live, key=lambda h: h.at).announcement.meta_leader

    def members(self) -> tuple[MemberView, ...]:
        """Every configured member (up or down) plus any member heard that is not listed."""
        now = time.monotonic()
        by_index = {h.announcement.index: h for h in self._heard.values() if h.announcement.index}
        views: list[MemberView] = []
        if self._topology is not None:
            for member in self._topology.members:
                heard = by_index.get(member.index)
                views.append(self._view(member.index, member.address, member.seed, heard, now))
        listed = {v.index for v in views}
        for heard in self._heard.values():
            if heard.announcement.index not in listed or heard.announcement.index == 0:
                views.append(self._view(heard.announcement.index, "", False, heard, now))
        return tuple(views)

    def _view(
        self, index: int, address: str, seed: bool, heard: _Heard | None, now: float
    ) -> MemberView:
        is_self = heard is not None and heard.announcement.name == self._me.name
        if self._topology is not None and index == self._topology.own_index:
            is_self = True
        if heard is None:
            name = self._me.name if is_self else address
            return MemberView(name, index, address, seed, "up" if is_self else "down", is_self)
        age = now - heard.at
        up = is_self or age <= DOWN_AFTER
        peer = heard.announcement
        return MemberView(
            peer.name,
            index,
            address,
            seed,
            "up" if up else "down",
            is_self,
            tuple(peer.client_urls),
            tuple(peer.monitor_urls),
            round(age, 3),
        )
