"""The engine of one worker process: the subjects it owns in its own memory engine, the others
through their owners on the mesh (ADR 044).

- A subject belongs to worker ``owner_of(subject, workers)``. The owner numbers its messages
  (one (epoch, seq) space for the whole server), keeps snapshot, cache and history.
- The owner delivers each message to its own subscribers and forwards it once to every other
  worker that told it it has subscribers of the subject (``MeshInterest``), batched per turn of
  the loop (server/workers/mesh.py).
- A publish, snapshot, position, recovery or history request for a subject owned elsewhere is
  a ``MeshAsk`` to the owner, written before the caller's first suspension, so a connection's
  publishes keep their order (Engine.publish's contract).
- A worker tells an owner about its first subscriber of a subject before it asks for the
  subject's snapshot or recovery, on the same ordered link: no message falls between the two
  (a message both in the snapshot and forwarded is dropped by the session as already sent), and
  the subscribe answer means the subscription is in place on the owner.
- A question to an owner whose link is not up (the server is starting, or the owner restarts)
  is held, in order, and written when the link comes up, after the interest this worker
  re-announces then; it fails with engine_unavailable only if the link is not back within
  ``LINK_WAIT`` seconds (it was never written then: a held publish is not applied later).
- A question to an owner whose process stopped answering its supervisor's heartbeat (stopped
  with SIGSTOP, or stuck) fails at once with engine_unavailable instead of waiting
  ``ask_timeout`` for an answer that cannot come (``silent``: the supervisor's board).
- With a cluster engine (``clustered``, ADR 067) worker 0 owns every subject and its engine
  is the member's cluster engine: the others forward to it and deliver its forwards, and read
  the member's cluster status from the view it sends them (server/workers/cluster_view.py).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any

from pushgrid.protocol.errors import ErrorCode
from pushgrid.protocol.frames import Position

from ..cluster.isolation import Progress
from ..cluster.status import ClusterStatus
from ..engine.base import (
    Deliver,
    Engine,
    EngineFull,
    EngineRefusal,
    EngineStats,
    EngineUnavailable,
    Published,
    PublishRequest,
    Recovery,
    Snapshot,
    SnapshotLimitExceeded,
    SubjectEntry,
)
from ..engine.memory import MemoryEngine
from .cluster_view import SHARE_PERIOD, ClusterView
from .member_bus import MeshBus
from .mesh import Mesh
from .ownership import owner_of
from .totals import WorkerTotals
from .wire import (
    MeshAnswer,
    MeshAsk,
    MeshCluster,
    MeshForward,
    MeshInterest,
    MeshMessage,
    MeshSignal,
    MeshSpent,
    MeshTally,
    WorkerReport,
)

log = logging.getLogger(__name__)

#: seconds a question waits for its owner's link (start-up, a restart) before it fails
LINK_WAIT = 15.0
#: questions that change the owner's state: never asked twice (a lost answer is a failure)
_WRITES = frozenset({"publish", "remove_snapshot"})

_REFUSALS: dict[str, type[EngineRefusal]] = {
    cls.__name__: cls for cls in (EngineFull, SnapshotLimitExceeded, EngineRefusal)
}


def _refusal(answer: MeshAnswer) -> EngineRefusal:
    """The owner's refusal, raised again here with its code and reason."""
    if answer.error == EngineUnavailable.__name__:
        return EngineUnavailable(answer.reason)
    cls = _REFUSALS.get(answer.error or "", EngineRefusal)
    return cls(ErrorCode(answer.code), answer.reason)


class WorkersEngine(Engine):
    """One worker's view of the server's subjects (see the module's docstring)."""

    def __init__(
        self,
        inner: Engine,
        token: str,
        index: int,
        workers: int,
        ask_timeout: float = 5.0,
        silent: Callable[[int], float | None] | None = None,
        cluster: tuple[str, str] | None = None,
    ) -> None:
        self.inner = inner
        #: seconds worker i has not answered its heartbeat for, None while it answers
        self._silent = silent or (lambda peer: None)
        #: a cluster engine's (name, delivery mode): worker 0 owns every subject (ADR 067)
        self.clustered = cluster is not None
        self.name, self.delivery_mode = cluster or (inner.name, inner.delivery_mode)
        self._view = ClusterView()  # worker 0's cluster, on the other workers
        self._sharing: asyncio.Task[None] | None = None
        self.index = index
        self.workers = workers
        self.ask_timeout = ask_timeout
        self.mesh = Mesh(token, index, workers, self)
        #: occupancy and presence between the workers (server/workers/member_bus.py)
        self.bus = MeshBus(self.mesh, index, workers)
        # subjects this worker owns -> the other workers with subscribers of them
        self._peer_interest: dict[str, set[int]] = {}
        # subjects owned elsewhere that this worker's sessions follow (told to their owners)
        self._local_interest: set[str] = set()
        # questions written or held: ask id -> (owner, its answer; None: ask again, the link
        # was lost before the answer to a question that only reads)
        self._asks: dict[int, tuple[int, asyncio.Future[MeshAnswer | None]]] = {}
        # questions waiting for their owner's link, in the order they were asked
        self._held: dict[int, list[MeshAsk]] = {}
        self._reads: set[int] = set()  # ids of the questions in _asks that only read
        self._ask_ids = itertools.count(1)
        self._deliver: Deliver | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: worker 0's counters hold the others' last reports (server/workers/totals.py)
        self.totals: WorkerTotals | None = None
        #: worker 0's: what else a report carries goes there (the clients' delivery reports)
        self.reported: Callable[[WorkerReport], None] | None = None
        #: worker 0's: the others' per-subject deltas go there (server/workers/tally_share.py)
        self.tallied: Callable[[dict[str, list[int]]], None] | None = None
        #: the others' publish tokens per address go there (server/workers/address_rate.py)
        self.spent: Callable[[dict[str, int]], None] | None = None
        #: runs a monitoring operation on this worker's sessions for worker 0 (name, args)
        self.operate: Callable[[str, list[Any]], Awaitable[Any]] | None = None

    def owner(self, subject: str) -> int:
        return owner_of(subject, self.workers, self.clustered)

    def owns(self, subject: str) -> bool:
        return self.owner(subject) == self.index

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        await self.inner.start(self._delivered)
        await self.mesh.start()
        if self.clustered and self.index == 0:
            self._sharing = asyncio.get_running_loop().create_task(self._share_cluster())

    async def close(self) -> None:
        if self._sharing is not None:
            self._sharing.cancel()
        self.bus.close()
        await self.mesh.close()
        for _peer, future in self._asks.values():
            if not future.done():
                future.cancel()
        self._asks.clear()
        self._held.clear()
        await self.inner.close()

    async def wait_for_peers(self) -> None:
        """Until every other worker is linked (at most ``LINK_WAIT`` s: then a WARNING, and the
        questions for a missing one are held as usual): a worker serves clients only then, so
        the server's first clients never meet a half-built mesh."""
        missing = await self.mesh.wait_complete(LINK_WAIT)
        if self.clustered and self.index != 0:  # and until worker 0's cluster engine runs
            await self._view.wait_first(self.index, LINK_WAIT)
        if missing:
            log.warning(
                "worker %d: no link to worker%s %s after %g s: serving anyway (questions for "
                "them wait until they link)",
                self.index,
                "s" if len(missing) > 1 else "",
                ", ".join(map(str, missing)),
                LINK_WAIT,
            )

    def use_interest(self, in_use: Callable[[str], bool]) -> None:
        # an owned subject another worker follows is in use too (guarantee 9)
        interest = self._peer_interest
        self.inner.use_interest(lambda subject: in_use(subject) or subject in interest)

    def interest_changed(self, subject: str, present: bool) -> None:
        owner = self.owner(subject)
        if owner == self.index:
            return
        if present:
            self._local_interest.add(subject)
        else:
            self._local_interest.discard(subject)
        self.mesh.send(owner, MeshInterest(subject, present))

    # -- delivery ---------------------------------------------------------------------------

    def _delivered(self, message: Published) -> None:
        """The owner's delivery: its own subscribers, then one forward per interested worker."""
        if self._deliver is not None:
            self._deliver(message)
        peers = self._peer_interest.get(message.subject)
        if peers:
            forward = MeshForward(message)
            for peer in peers:
                self.mesh.send(peer, forward)

    # -- the mesh (server/workers/mesh.py MeshHandler) --------------------------------------

    def peer_up(self, peer: int) -> None:
        """A (re)started peer: tell it again which of its subjects this worker follows, then
        ask the questions held for it (interest first: a held snapshot question follows it);
        worker 0 of a cluster member tells it the member's cluster first."""
        view = self._cluster_view()
        if view is not None:
            self.mesh.send(peer, view)
        for subject in self._local_interest:
            if self.owner(subject) == peer:
                self.mesh.send(peer, MeshInterest(subject, True))
        for ask in self._held.pop(peer, ()):
            if ask.ask_id in self._asks:  # not given up meanwhile
                self.mesh.send(peer, ask)

    def peer_down(self, peer: int) -> None:
        if self.totals is not None:
            self.totals.gone(peer)
        for subject in [s for s, peers in self._peer_interest.items() if peer in peers]:
            self._unfollow(subject, peer)
        held = {ask.ask_id for ask in self._held.get(peer, ())}
        for ask_id, (owner, future) in list(self._asks.items()):
            if owner == peer and ask_id not in held:
                del self._asks[ask_id]
                if future.done():
                    continue
                if ask_id in self._reads:  # asked again when the owner is back
                    future.set_result(None)
                else:  # a publish the owner may or may not have applied: the client retries
                    future.set_exception(EngineUnavailable(self._gone(peer)))

    def received(self, peer: int, message: MeshMessage) -> None:
        if isinstance(message, MeshForward):
            if self._deliver is not None:
                self._deliver(message.message)
        elif isinstance(message, MeshInterest):
            if message.present:
                self._peer_interest.setdefault(message.subject, set()).add(peer)
            else:
                self._unfollow(message.subject, peer)
        elif isinstance(message, MeshAsk):
            self._spawn(self._answer(peer, message))
        elif isinstance(message, MeshAnswer):
            self._answered(message)
        else:
            self._for_the_server(message)

    def _for_the_server(self, message: MeshMessage) -> None:
        """What another worker shares with this one's services (monitoring, occupancy, rates)."""
        if isinstance(message, MeshSignal):
            self.bus.received(message)
        elif isinstance(message, WorkerReport):
            self._report(message)
        elif isinstance(message, MeshTally) and self.tallied is not None:
            self.tallied(message.rows)
        elif isinstance(message, MeshSpent) and self.spent is not None:
            self.spent(message.spent)
        elif isinstance(message, MeshCluster):
            self._view.absorb(message)

    def _answered(self, answer: MeshAnswer) -> None:
        waiting = self._asks.pop(answer.ask_id, None)
        if waiting is not None and not waiting[1].done():
            waiting[1].set_result(answer)

    def _report(self, report: WorkerReport) -> None:
        """Another worker's numbers (worker 0 only: it holds ``totals``)."""
        if self.totals is not None:
            self.totals.absorb(report)
            if self.reported is not None:
                self.reported(report)

    def _unfollow(self, subject: str, peer: int) -> None:
        peers = self._peer_interest.get(subject)
        if peers is not None:
            peers.discard(peer)
            if not peers:
                del self._peer_interest[subject]

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, peer: int, ask: MeshAsk) -> None:
        """MeshAnswer a peer's question about a subject this worker owns."""
        answer = MeshAnswer(ask.ask_id)
        inner = self.inner
        try:
            if ask.kind == "publish" and ask.request is not None:
                answer.published = await self._publish_own(ask.request)
            elif ask.kind == "snapshot":
                answer.snapshot = await inner.snapshot(ask.subject)
            elif ask.kind == "position":
                answer.position = await inner.position(ask.subject)
            elif ask.kind == "recover":
                answer.recovery = await inner.recover(ask.subject, Position(ask.epoch, ask.seq))
            elif ask.kind == "history":
                answer.history = await inner.history(ask.subject, ask.limit)
            elif ask.kind == "remove_snapshot":
                answer.value = await inner.remove_snapshot(ask.subject)
            elif ask.kind == "operation" and self.operate is not None:
                answer.value = await self.operate(ask.name, ask.args)
            else:
                raise EngineUnavailable(f"unknown mesh question {ask.kind!r}")
        except EngineRefusal as exc:
            answer.error = type(exc).__name__
            answer.code = exc.code.value
            answer.reason = exc.reason
        self.mesh.send(peer, answer)

    # -- questions to an owner --------------------------------------------------------------

    def _gone(self, owner: int) -> str:
        return f"worker {owner} of this server, which owns the subject, is restarting: retry"

    async def _ask(self, owner: int, ask: MeshAsk) -> MeshAnswer:
        """``ask`` the owner; a read whose link is lost before the answer is asked again when
        the owner is back (within ``LINK_WAIT`` of the first try)."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + LINK_WAIT
        if ask.kind not in _WRITES:
            self._reads.add(ask.ask_id)
        try:
            while True:
                answer = await self._ask_once(owner, ask, max(0.0, give_up - loop.time()))
                if answer is not None:
                    break
        finally:
            self._reads.discard(ask.ask_id)
        if answer.error is not None:
            raise _refusal(answer)
        return answer

    async def _ask_once(self, owner: int, ask: MeshAsk, link_wait: float) -> MeshAnswer | None:
        silent = self._silent(owner)
        if silent is not None:  # its answer cannot come: say so now, the caller retries
            raise EngineUnavailable(
                f"worker {owner} of this server, which owns the subject, has not answered its "
                f"heartbeat for {silent:.0f} s: retry"
            )
        future: asyncio.Future[MeshAnswer | None] = asyncio.get_running_loop().create_future()
        self._asks[ask.ask_id] = (owner, future)
        timeout = self.ask_timeout
        held = not self.mesh.send(owner, ask)
        if held:  # written by peer_up when the link comes up (see the module's docstring)
            self._held.setdefault(owner, []).append(ask)
            timeout += link_wait
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            if held and self._unhold(owner, ask):
                raise EngineUnavailable(
                    f"{self._gone(owner)} (not back within {LINK_WAIT:g} s)"
                ) from None
            raise EngineUnavailable(
                f"worker {owner} of this server did not answer within {self.ask_timeout:g} s"
            ) from None
        finally:
            self._asks.pop(ask.ask_id, None)

    def _unhold(self, owner: int, ask: MeshAsk) -> bool:
        """Forget a held question; False when it had been written meanwhile."""
        held = self._held.get(owner, [])
        for i, waiting in enumerate(held):
            if waiting is ask:
                del held[i]
                return True
        return False

    async def ask_every_other(self, name: str, args: list[Any]) -> list[Any]:
        """Every other linked worker's result of the monitoring operation ``name`` on its own
        sessions; a worker that is not linked, or does not answer within ``ask_timeout``, is
        left out (an operator's view must not wait for a stopped worker)."""

        async def one(peer: int) -> Any:
            ask = self._question("operation", "")
            ask.name, ask.args = name, args
            try:
                answer = await self._ask_once(peer, ask, 0.0)
            except EngineUnavailable:
                return None
            return None if answer is None or answer.error else answer.value

        peers = self.mesh.up_peers()
        return [v for v in await asyncio.gather(*map(one, peers)) if v is not None]

    def _question(self, kind: str, subject: str) -> MeshAsk:
        return MeshAsk(next(self._ask_ids), kind, subject)

    async def publish(self, request: PublishRequest) -> Published:
        owner = self.owner(request.subject)
        if owner == self.index:
            return await self._publish_own(request)
        ask = self._question("publish", request.subject)
        ask.request = request
        answer = await self._ask(owner, ask)
        assert answer.published is not None
        return answer.published

    async def snapshot(self, subject: str) -> Snapshot | None:
        owner = self.owner(subject)
        if owner == self.index:
            return await self.inner.snapshot(subject)
        return (await self._ask(owner, self._question("snapshot", subject))).snapshot

    async def position(self, subject: str) -> tuple[str, int]:
        owner = self.owner(subject)
        if owner == self.index:
            return await self.inner.position(subject)
        answer = await self._ask(owner, self._question("position", subject))
        assert answer.position is not None
        epoch, seq = answer.position
        return epoch, seq

    async def recover(self, subject: str, since: Position) -> Recovery:
        owner = self.owner(subject)
        if owner == self.index:
            return await self.inner.recover(subject, since)
        ask = self._question("recover", subject)
        ask.epoch, ask.seq = since.epoch, since.seq
        answer = await self._ask(owner, ask)
        assert answer.recovery is not None
        return answer.recovery

    async def history(self, subject: str, limit: int) -> list[Published]:
        owner = self.owner(subject)
        if owner == self.index:
            return await self.inner.history(subject, limit)
        ask = self._question("history", subject)
        ask.limit = limit
        return (await self._ask(owner, ask)).history or []

    async def remove_snapshot(self, subject: str) -> bool:
        owner = self.owner(subject)
        if owner == self.index:
            return await self.inner.remove_snapshot(subject)
        answer = await self._ask(owner, self._question("remove_snapshot", subject))
        return bool(answer.value)

    async def _publish_own(self, request: PublishRequest) -> Published:
        """A publish this worker owns: the memory engine's synchronous path (it never waits),
        else the cluster engine's (it takes the message's place before its first suspension,
        so the order of the questions is kept: an answer task starts in arrival order)."""
        inner = self.inner
        if isinstance(inner, MemoryEngine):
            return inner.publish_now(request)
        return await inner.publish(request)

    def catalog(self) -> Iterator[SubjectEntry]:
        """The subjects this worker owns; the server's are every worker's (the subject
        browser asks the others: server/monitoring/operations.py)."""
        return self.inner.catalog()

    def member_bus(self) -> MeshBus:
        return self.bus

    def stats(self) -> EngineStats:
        """This worker's own subjects; worker 0's: every worker's (server/workers/totals.py)."""
        own = self.inner.stats()
        return own if self.totals is None else self.totals.engine_stats(own)

    def sweep(self) -> None:
        self.inner.sweep()

    # -- the member's cluster (ADR 067) --------------------------------------------------------

    def _cluster_view(self) -> MeshCluster | None:
        """Worker 0's engine's view of its cluster (None: not worker 0 of a cluster member)."""
        if not self.clustered or self.index != 0:
            return None
        status = self.inner.cluster_status()
        return None if status is None else MeshCluster(status, self.inner.stream_progress())

    async def _share_cluster(self) -> None:
        """Worker 0: its cluster view to every other linked worker, every SHARE_PERIOD."""
        while True:
            await asyncio.sleep(SHARE_PERIOD)
            view = self._cluster_view()
            if view is not None:
                for peer in self.mesh.up_peers():
                    self.mesh.send(peer, view)

    def advertise(self, client_urls: list[str], monitor_urls: list[str]) -> None:
        self.inner.advertise(client_urls, monitor_urls)  # worker 0's cluster engine: the member's

    def cluster_status(self) -> ClusterStatus | None:
        if not self.clustered or self.index == 0:
            return self.inner.cluster_status()
        return self._view.status(self.mesh.is_up(0))

    def stream_progress(self) -> Progress | None:
        if not self.clustered or self.index == 0:
            return self.inner.stream_progress()
        return self._view.progress(self.mesh.is_up(0))
