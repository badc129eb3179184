"""The numbers of the built-in signals (``alerting.SIGNALS``) from what the members report (pure).

Member down, quorum lost, archive failing and delivery stalled are the reasons of the one health
model (:func:`pushgrid.metrics.health.cluster_health` over the members' own Cluster MBeans): a rule
reads 1 while the model gives the reason for that member, 0 while it does not. The model is not
re-derived here: whatever makes ``/health`` and ``GET /api/v1/cluster`` say "member m3 is down"
makes ``member_down`` read 1 on target m3. ``delivery_stalled`` is read per canary pair: its
target is ``publisher->receiver``, so the alert names the pair (ADR 049).

Client loss (``client_loss``, ADR 048) is what a Guaranteed member's clients reported over its
last 60 s (MBean ``pushgrid:type=Delivery``, ``Loss``): their resyncs plus their failed
recoveries, messages they could not get back. A Standard member gives no value (its clients
resync by design after a failover), nor does a member whose Delivery MBean cannot be read.

A restart is a change of the member's ``StartTime`` (MBean ``pushgrid:type=Server``) between
two looks; slow consumers are the member's ``slow_consumer_disconnects_total`` counter as a rate
over the real time between two looks (a counter that goes back is a restart: no rate that look).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from pushgrid.metrics.health import Reason

#: the reason of the health model each health signal reads
HEALTH_SIGNALS: Final = {
    "member_down": "member_down",
    "quorum_lost": "no_quorum",
    "archive_failing": "archive_failing",
}
#: a member that does not answer in time (alive: its kernel takes the connection) is down for
#: ``MemberDown`` once its silence lasts this long; one that refuses (its process is gone) at once.
#: Under a 2-core machine at load 11, live members answered the Cluster MBean in up to 2.5 s
#: (`make cluster` with benchmarks/ops_walk.py): with no such grace ``MemberDown`` (critical)
#: fired and resolved six times in three minutes for members that served every client.
SILENT_DOWN_SECONDS: Final = 10.0
SLOW_COUNTER: Final = "slow_consumer_disconnects_total"
STALLED: Final = "delivery_stalled"  # its reason's member is the pair publisher->receiver

Key = tuple[str, str, str]


def key(signal: str) -> Key:
    return signal, "current", "current"


def health_readings(
    names: Iterable[str],
    readable: Iterable[str],
    reasons: Iterable[Reason],
    unsure: Iterable[str] = (),
) -> dict[str, dict[Key, float | None]]:
    """Per member: ``member_down`` (every member), ``quorum_lost`` and ``archive_failing``
    (members that could be read; an unreadable member's quorum is unknown, not lost).

    ``unsure``: members silent for less than :data:`SILENT_DOWN_SECONDS` (left out of the
    health model by the caller): their ``member_down`` is 1 only when a peer does not hear them,
    else missing (neither fires nor resolves) rather than 0."""
    given = {(r.code, r.member) for r in reasons}
    readable_set = set(readable)
    unsure_set = set(unsure)
    out: dict[str, dict[Key, float | None]] = {}
    for name in sorted({*names, *(m for code, m in given if code == "member_down" and m)}):
        values: dict[Key, float | None] = {}
        for signal, code in HEALTH_SIGNALS.items():
            if (code, name) in given:
                values[key(signal)] = 1.0
            elif name in unsure_set:
                continue
            elif signal == "member_down" or name in readable_set:
                values[key(signal)] = 0.0
        out[name] = values
    return out


def stall_readings(
    members: Iterable[str], readable: Iterable[str], reasons: Iterable[Reason]
) -> dict[str, dict[Key, float | None]]:
    """``delivery_stalled`` per canary pair ``publisher->receiver`` whose receiver could be read:
    1 while the receiver's health gives the reason for that pair, else 0 (an unreadable
    receiver's pairs are unknown: missing, so their alerts neither fire nor resolve)."""
    stalled = {r.member for r in reasons if r.code == STALLED}
    names = sorted(set(members))
    out: dict[str, dict[Key, float | None]] = {}
    for receiver in sorted(set(readable)):
        for publisher in names:
            pair = f"{publisher}->{receiver}"
            out[pair] = {key(STALLED): 1.0 if pair in stalled else 0.0}
    for pair in stalled - set(out):  # a publisher this admin API does not list yet
        out[pair] = {key(STALLED): 1.0}
    return out


@dataclass(frozen=True, slots=True)
class ServerLook:
    """What one look at a member's Server MBean gives (``at``: monotonic seconds)."""

    at: float
    start_time: float  # ms since the epoch
    slow_disconnects: float
    delivery_mode: str = ""  # "guaranteed" or "standard" (the Server MBean's DeliveryMode)


@dataclass
class MemberTracker:
    """Restarts and counter rates of every member, between looks."""

    last: dict[str, ServerLook] = field(default_factory=dict)

    def readings(
        self, looks: Mapping[str, ServerLook | None]
    ) -> dict[str, dict[Key, float | None]]:
        """``member_restarted`` and ``slow_consumer_disconnects`` of every member looked at
        (None: it could not be read, its values are missing and its last look is kept)."""
        out: dict[str, dict[Key, float | None]] = {}
        for name, look in looks.items():
            if look is None:
                continue
            before = self.last.get(name)
            restarted = before is not None and look.start_time != before.start_time
            out[name] = {
                key("member_restarted"): 1.0 if restarted else 0.0,
                key("slow_consumer_disconnects"): _rate(before, look, restarted),
            }
            self.last[name] = look
        return out


def _rate(before: ServerLook | None, look: ServerLook, restarted: bool) -> float | None:
    if before is None or restarted or look.at <= before.at:
        return None
    delta = look.slow_disconnects - before.slow_disconnects
    return None if delta < 0 else delta / (look.at - before.at)


#: the loss counters that are messages a client did not get (gaps it recovered are not)
LOST_KINDS: Final = ("resyncs", "recovery_failed")


def loss_readings(
    looks: Mapping[str, tuple[ServerLook | None, Mapping[str, int] | None]],
) -> dict[str, dict[Key, float | None]]:
    """``client_loss`` of every member: resyncs + failed recoveries its clients reported in
    the window, on a Guaranteed member (missing on others and on unreadable ones)."""
    out: dict[str, dict[Key, float | None]] = {}
    for name, (look, loss) in looks.items():
        if look is None or loss is None or look.delivery_mode != "guaranteed":
            continue
        out[name] = {key("client_loss"): float(sum(loss.get(k, 0) for k in LOST_KINDS))}
    return out


def merge(*parts: Mapping[str, Mapping[Key, float | None]]) -> dict[str, dict[Key, float | None]]:
    """Readings of several sources, per member."""
    out: dict[str, dict[Key, float | None]] = {}
    for part in parts:
        for name, values in part.items():
            out.setdefault(name, {}).update(values)
    return out


# --- the processes of a member (Workers, ADR 061) ------------------------------------------

WORKER_SIGNALS: Final = ("worker_restarted", "worker_not_answering")
#: earlier targets of one worker kept reading 0 (so their alerts resolve after a new life)
_RETIRED_KEPT: Final = 8


def worker_target(member: str, index: int, pid: int) -> str:
    """The alert target of one process: the member, the worker index and its pid."""
    return f"{member} worker {index} (pid {pid})"


@dataclass(frozen=True, slots=True)
class WorkerLook:
    """One process as one look at a member's Workers MBean gives it."""

    index: int
    pid: int  # 0: dead, waiting for its restart
    restarts: int
    answering: bool


@dataclass
class WorkerTracker:
    """``worker_restarted`` and ``worker_not_answering`` per process, between looks.

    A target names the pid, so a restarted worker is a new target: its earlier targets keep
    reading 0 (their alerts resolve, they never hang firing on a pid that is gone)."""

    restarts: dict[tuple[str, int], int] = field(default_factory=dict)
    targets: dict[tuple[str, int], list[str]] = field(default_factory=dict)

    def readings(
        self, looks: Mapping[str, Sequence[WorkerLook] | None]
    ) -> dict[str, dict[Key, float | None]]:
        out: dict[str, dict[Key, float | None]] = {}
        for member, rows in looks.items():
            for row in rows or ():  # an unreadable member: nothing (no value)
                out.update(self._one(member, row))
        return out

    def _one(self, member: str, row: WorkerLook) -> dict[str, dict[Key, float | None]]:
        worker = (member, row.index)
        known = self.targets.setdefault(worker, [])
        out: dict[str, dict[Key, float | None]] = {
            old: {key(name): 0.0 for name in WORKER_SIGNALS} for old in known
        }
        if row.pid == 0:  # dead: its next life (a new pid, a new target) tells the restart
            return out
        before = self.restarts.get(worker)
        self.restarts[worker] = row.restarts
        restarted = before is not None and row.restarts > before
        target = worker_target(member, row.index, row.pid)
        if target in known:
            known.remove(target)
        known.append(target)
        del known[:-_RETIRED_KEPT]
        out[target] = {
            key("worker_restarted"): 1.0 if restarted else 0.0,
            key("worker_not_answering"): 0.0 if row.answering else 1.0,
        }
        return out
