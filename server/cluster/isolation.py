"""Does this member see its cluster? A pure state machine fed with observations and a clock.

A Guaranteed member that cannot reach its cluster (a network partition, its NATS node cut off)
keeps answering its clients' pings but delivers nothing: its subscribers go stale without a
signal. This module decides when that has lasted long enough to tell them (issue 23 item 2):

- :func:`cluster_loss` reads one :class:`ClusterStatus`: why this member does not see its
  cluster right now (no connection to its NATS node, fewer seed members heard than a quorum),
  or None. A stream without a leader while the member hears a quorum of seeds is not a loss:
  that is an election the whole cluster waits for (5-8 s), and sending clients to members that
  wait just as well would only make them reconnect.
- :class:`IsolationDetector` adds the member's own stream view (the last stream sequence it
  knows the stream holds, and the sequence it has delivered through): records the stream held
  ``timeout`` seconds ago and still not delivered mean this member is behind. A loss that lasts
  ``timeout`` seconds more makes the member **isolated**; the first observation without a loss
  makes it **rejoin**. The server closes its clients with ``CloseCode.CLUSTER_ISOLATED`` when
  it becomes isolated and refuses new sessions until it rejoins (docs/cluster.md, "Partitions").

Only Guaranteed members are judged: a standalone or Standard member never is.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum

from .status import ClusterStatus


class IsolationChange(StrEnum):
    ISOLATED = "isolated"  # close every client with CLUSTER_ISOLATED, refuse new sessions
    REJOINED = "rejoined"  # accept sessions again


@dataclass(frozen=True, slots=True)
class Progress:
    """This member's stream view: the last sequence it knows the stream holds (from the stream
    leader), and the sequence it has delivered to its clients through."""

    stream_last: int
    delivered: int


def cluster_loss(status: ClusterStatus) -> str | None:
    """Why this member does not see its cluster now, or None when it does (or is not judged)."""
    if status.mode != "guaranteed":
        return None
    if not status.nats_connected:
        return "no connection to its NATS node"
    seeds = [m for m in status.members if m.seed]
    up = sum(1 for m in seeds if m.state == "up")
    if seeds and up < status.quorum_size:
        return f"hears {up} of {len(seeds)} seed members, a quorum is {status.quorum_size}"
    if not seeds and not status.quorum:  # an external NATS cluster: no heartbeats of seeds
        return "no stream leader with a quorum of replicas"
    return None


class IsolationDetector:
    """``observe`` once in a while (and before answering a new client); it returns the change
    of state, if any. ``reason`` says why the member is isolated (None: it is not)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.reason: str | None = None
        self._lost_since: float | None = None
        self._pending: deque[tuple[float, int]] = deque()  # (first seen at, stream sequence)

    @property
    def isolated(self) -> bool:
        return self.reason is not None

    def observe(
        self, now: float, loss: str | None, progress: Progress | None
    ) -> IsolationChange | None:
        loss = loss or self._behind(now, progress)
        if loss is None:
            self._lost_since = None
            if self.reason is None:
                return None
            self.reason = None
            return IsolationChange.REJOINED
        if self._lost_since is None:
            self._lost_since = now
        if self.reason is not None:
            self.reason = loss  # still isolated: the latest reason
            return None
        if now - self._lost_since < self.timeout:
            return None
        self.reason = loss
        return IsolationChange.ISOLATED

    def _behind(self, now: float, progress: Progress | None) -> str | None:
        """Records the stream held ``timeout`` seconds ago and still not delivered."""
        if progress is None:
            return None
        pending = self._pending
        if not pending or pending[-1][1] < progress.stream_last:
            pending.append((now, progress.stream_last))
        while pending and pending[0][1] <= progress.delivered:
            pending.popleft()
        if not pending or now - pending[0][0] < self.timeout:
            return None
        behind = pending[-1][1] - progress.delivered
        return (
            f"its stream view is behind: {behind} records not delivered,"
            f" the oldest known for {now - pending[0][0]:.1f} s"
        )
