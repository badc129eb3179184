"""Standard delivery: messages fan out to every member over core NATS; each member keeps its own
cache (a :class:`MemoryEngine` with its own epoch).

A publish goes out on ``pg.s.<subject>`` and is applied when it comes back from NATS, on every
member alike (the publishing member included), so every member delivers a publisher's messages in
the order that publisher sent them. A client that reconnects to the same member recovers from its
cache; one that fails over to another member meets another epoch and gets the snapshot and a data
resync (spec: Standard Message Delivery). No storage, no quorum: any number of members may be up.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import time
from collections.abc import Callable, Iterator

import msgspec
import nats.errors
from nats.aio.msg import Msg

from pushgrid.protocol.frames import Position, QoS

from ..cluster.link import ClusterLink
from ..cluster.status import ClusterStatus
from .base import (
    Deliver,
    Engine,
    EngineStats,
    EngineUnavailable,
    Published,
    PublishRequest,
    Recovery,
    Snapshot,
    SnapshotLimitExceeded,
    SubjectEntry,
)
from .limits import EngineLimits
from .memory import DEFAULT_LIMITS, MemoryEngine
from .nats_wire import STANDARD_PREFIX, subject_token, token_subject

log = logging.getLogger(__name__)

_ECHO_TIMEOUT = 5.0


class _Wire(msgspec.Struct, frozen=True, array_like=True):
    origin: str  # the publishing member's tag + publish number: its own echo resolves it
    content: str
    fields: dict[str, str]
    retained: bool
    qos: QoS
    msg_id: str | None = None  # the publisher's idempotency key: every member drops a repeat
    ingress: int = 0  # us since the Unix epoch at the ingress member (older members: absent)


class _Removal(msgspec.Struct, frozen=True, array_like=True):
    """A retained snapshot removed by an operator (ADR 051): every member drops its own."""

    origin: str
    subject: str


#: where removals travel, signed like the membership messages (only a member may send one)
REMOVALS_SUBJECT = "pg.snapshot.remove"

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Wire)
_removal_decoder = msgspec.msgpack.Decoder(_Removal)


class StandardClusterEngine(Engine):
    name = "nats"
    delivery_mode = "standard"

    def __init__(
        self,
        link: ClusterLink,
        limits: EngineLimits = DEFAULT_LIMITS,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.link = link
        self.limits = limits
        self.local = MemoryEngine(limits, clock=clock)
        self._tag = secrets.token_hex(4)
        self._numbers = itertools.count(1)
        self._echoes: dict[str, asyncio.Future[Published]] = {}
        self._removals: dict[str, asyncio.Future[bool]] = {}

    async def start(self, deliver: Deliver) -> None:
        await self.link.start()
        await self.local.start(deliver)
        await self.link.nc.subscribe(
            STANDARD_PREFIX + ">",
            cb=self._on_message,
            pending_msgs_limit=1_000_000,
            pending_bytes_limit=1 << 30,
        )
        await self.link.subscribe_signed(REMOVALS_SUBJECT, self._on_removal)

    async def close(self) -> None:
        for echo in self._echoes.values():
            echo.cancel()
        await self.local.close()
        await self.link.close()

    async def publish(self, request: PublishRequest) -> Published:
        if not self.link.connected:
            raise EngineUnavailable("this member is not connected to the cluster")
        # the bounds are checked where the message comes in (guarantee 8); every member then
        # applies it, so none drops a message another member accepted
        self.local.admit(request)
        origin = f"{self._tag}-{next(self._numbers)}"
        echo: asyncio.Future[Published] = asyncio.get_running_loop().create_future()
        self._echoes[origin] = echo
        wire = _Wire(
            origin,
            request.content,
            request.fields,
            request.retained,
            request.qos,
            request.msg_id,
            request.ingress,
        )
        try:
            await self.link.nc.publish(
                STANDARD_PREFIX + subject_token(request.subject), _encoder.encode(wire)
            )
            return await asyncio.wait_for(echo, _ECHO_TIMEOUT)
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(f"the cluster did not take the message: {exc}") from exc
        finally:
            self._echoes.pop(origin, None)

    async def _on_message(self, msg: Msg) -> None:
        try:
            wire = _decoder.decode(msg.data)
            subject = token_subject(msg.subject[len(STANDARD_PREFIX) :])
        except (msgspec.DecodeError, ValueError):
            log.warning("ignored a malformed message on %s", msg.subject)
            return
        echo = self._echoes.get(wire.origin)
        request = PublishRequest(
            subject,
            wire.content,
            wire.fields,
            wire.retained,
            wire.qos,
            wire.msg_id,
            ingress=wire.ingress,
        )
        try:
            published = self.local.publish_now(request, enforce=False)
        except SnapshotLimitExceeded as exc:  # this member's snapshot refuses it (guarantee 11)
            if echo is not None and not echo.done():
                echo.set_exception(exc)
            return
        if echo is not None and not echo.done():
            echo.set_result(published)

    async def remove_snapshot(self, subject: str) -> bool:
        """Sent to every member (this one included) like a publish; answers once this member
        applied it. A member that is down misses it and keeps its snapshot (its cache and epoch
        are its own anyway: docs/cluster.md)."""
        if not self.link.connected:
            raise EngineUnavailable("this member is not connected to the cluster")
        origin = f"{self._tag}-{next(self._numbers)}"
        echo: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._removals[origin] = echo
        try:
            await self.link.publish_signed(
                REMOVALS_SUBJECT, _encoder.encode(_Removal(origin, subject))
            )
            return await asyncio.wait_for(echo, _ECHO_TIMEOUT)
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(f"the cluster did not take the removal: {exc}") from exc
        finally:
            self._removals.pop(origin, None)

    async def _on_removal(self, data: bytes) -> None:
        try:
            removal = _removal_decoder.decode(data)
        except msgspec.DecodeError:
            log.warning("ignored a malformed snapshot removal")
            return
        removed = self.local.remove_snapshot_now(removal.subject)
        echo = self._removals.get(removal.origin)
        if echo is not None and not echo.done():
            echo.set_result(removed)

    def catalog(self) -> Iterator[SubjectEntry]:
        return self.local.catalog()

    async def snapshot(self, subject: str) -> Snapshot | None:
        return await self.local.snapshot(subject)

    async def position(self, subject: str) -> tuple[str, int]:
        return await self.local.position(subject)

    async def recover(self, subject: str, since: Position) -> Recovery:
        return await self.local.recover(subject, since)

    async def history(self, subject: str, limit: int) -> list[Published]:
        return await self.local.history(subject, limit)

    def sweep(self) -> None:
        self.local.sweep()

    def use_interest(self, in_use: Callable[[str], bool]) -> None:
        self.local.use_interest(in_use)

    def stats(self) -> EngineStats:
        return self.local.stats()

    def advertise(self, client_urls: list[str], monitor_urls: list[str]) -> None:
        self.link.advertise(client_urls, monitor_urls)

    def member_bus(self) -> ClusterLink:
        return self.link

    def cluster_status(self) -> ClusterStatus:
        topology = self.link.topology
        return ClusterStatus(
            engine=self.name,
            mode=self.delivery_mode,
            members=self.link.members(),
            seeds=0,
            quorum_size=0,
            quorum=self.link.connected,
            nats_connected=self.link.connected,
            config_mismatch=self.link.mismatched() if topology is not None else (),
        )
