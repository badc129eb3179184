"""One health model (issue 21 item 2): ``ok | degraded | down`` and the reasons, computed here only.

A member computes its own health with :func:`member_health` from what it knows (its cluster view,
its archive, whether it is stopping); ``/health``, the MBean ``pushgrid:type=Cluster``, the
meta-subject ``/pushgrid/<member>/cluster`` and Prometheus show that value. The admin API merges
the members' healths (and the members it cannot read) with :func:`cluster_health`; the console
shows the admin API's answer. Nobody else decides what "degraded" means.

Reasons and what they cost:

=================== ========== ==================================================================
code                status     when
=================== ========== ==================================================================
``stopping``        down       the member is closing its clients (SIGTERM)
``nats_disconnected`` down     the member lost its NATS server: it cannot deliver cluster traffic
``cluster_isolated`` down      the member has not seen its cluster for ClusterIsolationTimeout (a
                               partition): it sent its clients elsewhere and refuses sessions
                               and publishes until it sees it again (server/cluster/isolation.py)
``no_quorum``       degraded   the member cannot store guaranteed messages (seed quorum lost);
                               it still serves Standard subjects (do not restart it for that)
``member_down``     degraded   a member of the cluster is not heard (or cannot be read)
``stream_lag``      degraded   a JetStream replica is more than ``STREAM_LAG_LIMIT`` records behind
``archive_failing`` degraded   the last archive write failed, or none for ``ARCHIVE_STALE`` s
``config_mismatch`` degraded   a member was started with other ``ClusterMembers``
``delivery_stalled`` degraded  "degraded: delivery": the canaries of a member that is up no
                               longer reach this member through its delivery path for
                               ``metrics.canary.STALE_AFTER`` s while its own are accepted (it
                               accepts publishes but delivers nothing); ``member`` names the
                               pair ``publisher->receiver``
=================== ========== ==================================================================

A member is ``down`` when one of its reasons is; the cluster is ``down`` when no member can be
read or every member that can is ``down``. Otherwise any reason makes it ``degraded``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

HealthStatus = Literal["ok", "degraded", "down"]

STREAM_LAG_LIMIT: Final = 1000  # records
ARCHIVE_STALE: Final = 10.0  # seconds without an archived sample while the archive is on

_DOWN: Final = frozenset({"stopping", "nats_disconnected", "cluster_isolated"})
_ORDER: Final = (
    "stopping",
    "nats_disconnected",
    "cluster_isolated",
    "no_quorum",
    "member_down",
    "stream_lag",
    "archive_failing",
    "config_mismatch",
    "delivery_stalled",
)


@dataclass(frozen=True, slots=True, order=True)
class Reason:
    """Why a member or the cluster is not ``ok``; ``member`` is whom it is about."""

    code: str
    member: str = ""

    @property
    def text(self) -> str:
        about = self.member
        return {
            "stopping": f"{about} is stopping",
            "nats_disconnected": f"{about} lost its NATS server",
            "cluster_isolated": f"{about} is cut off from its cluster (sends clients elsewhere)",
            "no_quorum": f"{about} has no quorum (cannot store guaranteed messages)",
            "member_down": f"member {about} is down",
            "stream_lag": f"stream replica {about} is behind",
            "archive_failing": f"{about} cannot write its metrics archive",
            "config_mismatch": f"member {about} has other ClusterMembers",
            "delivery_stalled": _stalled_text(about),
        }.get(self.code, f"{self.code} {about}".strip())

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "member": self.member, "text": self.text}


def _stalled_text(pair: str) -> str:
    publisher, _, receiver = pair.partition("->")
    return f"delivery: canaries of {publisher} do not reach {receiver or publisher}"


@dataclass(frozen=True, slots=True)
class Health:
    status: HealthStatus
    reasons: tuple[Reason, ...] = ()

    @property
    def summary(self) -> str:
        """One line: ``ok``, or the status and every reason."""
        if not self.reasons:
            return self.status
        return f"{self.status}: " + "; ".join(r.text for r in self.reasons)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reasons": [r.as_dict() for r in self.reasons]}


OK: Final = Health("ok")


def _rank(reason: Reason) -> tuple[int, str, str]:
    order = _ORDER.index(reason.code) if reason.code in _ORDER else len(_ORDER)
    return order, reason.member, reason.code


def verdict(reasons: Iterable[Reason]) -> Health:
    """The status the reasons add up to, reasons sorted and without duplicates."""
    unique = sorted(set(reasons), key=_rank)
    if not unique:
        return OK
    status: HealthStatus = "down" if any(r.code in _DOWN for r in unique) else "degraded"
    return Health(status, tuple(unique))


@dataclass(frozen=True, slots=True)
class ArchiveState:
    enabled: bool
    last_write: float  # Unix time; 0.0: none yet
    last_error: float  # Unix time; 0.0: none


def archive_failing(archive: ArchiveState | None, now: float) -> bool:
    """The last write failed, or the archive is on and nothing was written for a while."""
    if archive is None or not archive.enabled:
        return False
    if archive.last_error > archive.last_write:
        return True
    return archive.last_write > 0 and now - archive.last_write > ARCHIVE_STALE


def member_health(
    name: str,
    *,
    members_down: Sequence[str] = (),
    quorum: bool = True,
    nats_connected: bool = True,
    replica_lags: Mapping[str, int] | None = None,
    config_mismatch: Sequence[str] = (),
    archive: ArchiveState | None = None,
    now: float = 0.0,
    stopping: bool = False,
    isolated: bool = False,
    stalled_pairs: Sequence[str] = (),
) -> Health:
    """A member's health from what it knows (pure). ``stalled_pairs``: the canary pairs
    ``publisher->receiver`` (metrics/canary.py) whose delivery to this member stalled."""
    reasons: list[Reason] = []
    if stopping:
        reasons.append(Reason("stopping", name))
    if isolated:
        reasons.append(Reason("cluster_isolated", name))
    if not nats_connected:
        reasons.append(Reason("nats_disconnected", name))
    elif not quorum:
        reasons.append(Reason("no_quorum", name))
    reasons += [Reason("member_down", m) for m in members_down]
    reasons += [
        Reason("stream_lag", replica)
        for replica, lag in (replica_lags or {}).items()
        if lag > STREAM_LAG_LIMIT
    ]
    if archive_failing(archive, now):
        reasons.append(Reason("archive_failing", name))
    reasons += [Reason("config_mismatch", m) for m in config_mismatch]
    reasons += [Reason("delivery_stalled", pair) for pair in stalled_pairs]
    return verdict(reasons)


def cluster_health(members: Mapping[str, Health | None], down: Iterable[str] = ()) -> Health:
    """The cluster's health from each member's own (None: the member could not be read).

    A member that cannot be read (or that is listed in ``down``) is a ``member_down`` reason;
    every reason a member reports is the cluster's too.
    """
    reasons: list[Reason] = [Reason("member_down", m) for m in down]
    readable = {name: h for name, h in members.items() if h is not None}
    for name, health in members.items():
        if health is None:
            reasons.append(Reason("member_down", name))
        else:
            reasons += health.reasons
    merged = verdict(reasons)
    if not readable or all(h.status == "down" for h in readable.values()):
        return Health("down", merged.reasons)
    if merged.status == "down":  # some members cannot serve, others can
        return Health("degraded", merged.reasons)
    return merged


def member_transitions(
    previous: Mapping[str, str] | None, current: Mapping[str, str]
) -> list[tuple[str, str]]:
    """``(member, "up" | "down")`` for every member whose state changed (pure).

    ``previous`` None is the first look: nothing changed yet. A member new in ``current`` that
    is down is a change (it was configured or heard of and is not there); a member that
    disappears from ``current`` is forgotten, not reported.
    """
    if previous is None:
        return []
    changes: list[tuple[str, str]] = []
    for name, state in current.items():
        before = previous.get(name)
        if state != before and (before is not None or state == "down"):
            changes.append((name, state))
    return changes
