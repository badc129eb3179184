"""The member's cluster, as every worker of a clustered server sees it (ADR 067).

With a cluster engine, worker 0's engine is the member's one cluster engine: the NATS
connection, the membership and heartbeats, the stream. The other workers have no view of
their own, so worker 0 sends its engine's status and stream progress to each of them every
``SHARE_PERIOD`` seconds (and at once when a link comes up): ``/health``, the cluster status
and the isolation detector of every worker read the member's. While worker 0 is not linked
(it restarts) or its view is older than ``STALE_AFTER``, a worker says what is true of the
member then: it has no NATS connection (and, in Guaranteed mode, no quorum), so its health
is degraded and, past ClusterIsolationTimeout, its sessions are closed as isolated.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

from ..cluster.isolation import Progress
from ..cluster.status import ClusterStatus
from .wire import MeshCluster

log = logging.getLogger(__name__)

#: seconds between two views worker 0 sends
SHARE_PERIOD = 0.5
#: a view older than this is worker 0's last word, not its present one
STALE_AFTER = 3.0


class ClusterView:
    """The last view worker 0 sent, and when it arrived."""

    def __init__(self) -> None:
        self._last: MeshCluster | None = None
        self._at = 0.0
        self._first = asyncio.Event()

    def absorb(self, view: MeshCluster) -> None:
        self._last, self._at = view, time.monotonic()
        self._first.set()

    async def wait_first(self, index: int, warn_after: float) -> None:
        """Until worker 0 sent its first view: its cluster engine has started (a seed waits
        for its JetStream quorum), as a one-process member listens only once its engine has.
        No limit: without worker 0 the member serves nothing; a WARNING after ``warn_after``."""
        try:
            await asyncio.wait_for(self._first.wait(), warn_after)
        except TimeoutError:
            log.warning(
                "worker %d: worker 0 has not started the cluster engine after %g s: waiting",
                index,
                warn_after,
            )
            await self._first.wait()

    def status(self, linked: bool) -> ClusterStatus | None:
        """The member's status; a cut-off one (no NATS connection) when worker 0's is not
        current; None before its first view (the worker then serves nobody yet)."""
        if self._last is None:
            return None
        status = self._last.status
        if linked and time.monotonic() - self._at <= STALE_AFTER:
            return status
        quorum = status.quorum and status.mode != "guaranteed"
        return dataclasses.replace(status, nats_connected=False, quorum=quorum)

    def progress(self, linked: bool) -> Progress | None:
        if self._last is None or not linked:
            return None
        return self._last.progress
