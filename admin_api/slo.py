"""Service level objectives: good and total events, error budgets and burn rates (pure code;
docs/alerts.md "Service level objectives", ADR 055).

An objective says which share of events must be good over a period (``target``, e.g. 0.99 over
30 days). Its events come from what the members already count, cumulatively since their start:

============  ======================================================================================
kind          good / total events
============  ======================================================================================
latency       deliveries the clients measured at or under the threshold / every delivery they
              measured (the Delivery MBean's latency buckets since start, ADR 048)
loss          deliveries the clients measured / those + the messages they reported they could not
              get back (resyncs + failed recoveries: ``LOST_KINDS``)
recovery      recoveries answered from the cache (or up to date) / every recovery asked for (the
              member's ``recovery_successes_total`` and ``recovery_failures_total``)
subscribe     subscriptions opened / those + the ones the member failed to open (no quorum, an
              engine error: ``subscribes_total``, ``subscribe_failures_total``); a subscription
              the entitlement denied or the client got wrong (a bad subject, too many) is the
              client's answer, not a failure of the service, and counts in neither
============  ======================================================================================

**A latency threshold between two bucket edges.** The buckets (protocol/latency.py) hold
``(UPPER[i-1], UPPER[i]]``; a delivery counts as good only when its whole bucket lies at or
under the threshold, so the objective is judged at the largest edge at or under it
(:func:`threshold_edge`: 50 ms is judged at 39.811 ms). That never reports a latency as good
that may not be; the API shows the edge it uses (``threshold_edge_ms``). At an edge (10 ms,
100 ms, 1 s, ...: every tenth edge is a power of ten) the share is exact.

The recorder takes the *increase* of those counters between two looks at a member (a member that
restarted, whose counters went back, contributes what it counted since its start, as Prometheus'
``increase`` does) and adds it to the objective's minute (:class:`Events`).

**Burn rate** over a window: the window's bad share divided by the share the objective allows
(``1 - target``): 1 spends the budget exactly over the period, 14.4 spends 2 % of a 30-day budget
in one hour. A window without events burns 0. The multi-window alerts (the Google SRE workbook's
"multiwindow, multi-burn-rate") read the *smaller* of two windows' burn rates, so they fire only
while both the long and the short window burn faster than the threshold: fast = min(1 h, 5 min)
at 14.4x, slow = min(6 h, 30 min) at 6x.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from pushgrid.protocol.latency import UPPER

from .alert_signals import LOST_KINDS

ObjectiveKind = Literal["latency", "loss", "recovery", "subscribe"]
OBJECTIVE_KINDS: Final[tuple[str, ...]] = get_args(ObjectiveKind)

#: the windows the burn rates are computed over (seconds), and the two alerts' pairs
BURN_WINDOWS: Final = {"5m": 300, "30m": 1800, "1h": 3600, "6h": 21600}
FAST: Final = ("1h", "5m")
SLOW: Final = ("6h", "30m")
FAST_BURN: Final = 14.4  # 2 % of a 30-day budget in 1 h
SLOW_BURN: Final = 6.0  # 5 % of a 30-day budget in 6 h
MINUTE: Final = 60


def threshold_edge(threshold_ms: float) -> tuple[int, float]:
    """The last bucket whose upper edge is at or under ``threshold_ms``, and that edge in ms
    (-1 and 0 when the threshold is under the first edge: no delivery can be shown good)."""
    index = bisect_right(UPPER, threshold_ms * 1000.0) - 1
    return index, (UPPER[index] / 1000.0 if index >= 0 else 0.0)


@dataclass(frozen=True, slots=True)
class Events:
    """Good and total events (good <= total)."""

    good: int = 0
    total: int = 0

    @property
    def bad(self) -> int:
        return self.total - self.good

    def __add__(self, other: Events) -> Events:
        return Events(self.good + other.good, self.total + other.total)


@dataclass(frozen=True, slots=True)
class PatternCounts:
    """A watched pattern's cumulative latency buckets and loss counters on one member."""

    latency: tuple[int, ...]
    loss: Mapping[str, int]

    def since(self, before: PatternCounts) -> PatternCounts | None:
        """The increase; None when a counter went back (the pattern was watched anew)."""
        latency = tuple(a - b for a, b in zip(self.latency, before.latency, strict=True))
        loss = {k: self.loss.get(k, 0) - before.loss.get(k, 0) for k in self.loss}
        if min((*latency, *loss.values()), default=0) < 0:
            return None
        return PatternCounts(latency, loss)


@dataclass(frozen=True, slots=True)
class MemberCounts:
    """One look at a member: its cumulative counters (since ``start_time``)."""

    start_time: int
    latency: tuple[int, ...]  # buckets since start
    loss: Mapping[str, int]  # loss counters since start
    recovered: int  # recovery_successes_total
    recovery_failed: int  # recovery_failures_total
    subscribed: int = 0  # subscribes_total
    subscribe_failed: int = 0  # subscribe_failures_total
    patterns: Mapping[str, PatternCounts] = field(default_factory=dict)  # watched patterns


def increase(before: MemberCounts | None, after: MemberCounts) -> MemberCounts | None:
    """What the member counted between two looks (None on the first look: unknown). After a
    restart (another start time, or a counter that went back) all it counted since. A watched
    pattern's counts start at zero when the member first counts for it (after it is watched):
    one the previous look did not list, or whose counters went back (watched anew), counted all
    it holds since that look."""
    if before is None:
        return None
    restarted = before.start_time != after.start_time
    latency = tuple(a - b for a, b in zip(after.latency, before.latency, strict=True))
    loss = {k: after.loss.get(k, 0) - before.loss.get(k, 0) for k in after.loss}
    scalars = (
        after.recovered - before.recovered,
        after.recovery_failed - before.recovery_failed,
        after.subscribed - before.subscribed,
        after.subscribe_failed - before.subscribe_failed,
    )
    if restarted or min((*latency, *loss.values(), *scalars), default=0) < 0:
        return after
    patterns = {
        name: (counts.since(before.patterns[name]) if name in before.patterns else None) or counts
        for name, counts in after.patterns.items()
    }
    return MemberCounts(after.start_time, latency, loss, *scalars, patterns=patterns)


@dataclass(frozen=True, slots=True)
class ObjectiveSpec:
    """What an objective measures (the stored row, admin_models.SloObjective, without its
    bookkeeping)."""

    id: int
    name: str
    kind: str  # ObjectiveKind
    target: float  # the good share to keep, 0 < target < 1
    period_days: int
    threshold_ms: float | None = None  # latency only
    member: str | None = None  # one member's events only; None: every member's
    pattern: str | None = None  # one watched pattern's (latency and loss kinds only)

    def counts_on(self, member: str) -> bool:
        """The objective counts ``member``'s events."""
        return self.member is None or self.member == member

    def events(self, counts: MemberCounts) -> Events:
        """The objective's events in one member's counts."""
        latency, loss = counts.latency, counts.loss
        if self.pattern is not None:
            of_pattern = counts.patterns.get(self.pattern)
            if of_pattern is None:  # not watched on that member, or its first look
                return Events()
            latency, loss = of_pattern.latency, of_pattern.loss
        if self.kind == "latency":
            edge, _ = threshold_edge(self.threshold_ms or 0.0)
            return Events(sum(latency[: edge + 1]), sum(latency))
        if self.kind == "loss":
            delivered = sum(latency)
            lost = sum(loss.get(k, 0) for k in LOST_KINDS)
            return Events(delivered, delivered + lost)
        if self.kind == "subscribe":
            return Events(counts.subscribed, counts.subscribed + counts.subscribe_failed)
        return Events(counts.recovered, counts.recovered + counts.recovery_failed)


def burn_rate(events: Events, target: float) -> float:
    """The window's bad share over the allowed one (0 without events)."""
    if events.total <= 0:
        return 0.0
    return (events.bad / events.total) / (1.0 - target)


def budget_remaining(events: Events, target: float) -> float:
    """The share of the period's error budget not spent yet: 1 untouched, 0 spent, below 0
    overspent (1 without events)."""
    allowed = (1.0 - target) * events.total
    if allowed <= 0:
        return 1.0
    return 1.0 - events.bad / allowed


def minute_of(at: float) -> int:
    """The start of the minute holding ``at`` (Unix seconds)."""
    return int(at // MINUTE) * MINUTE


def window_events(minutes: Mapping[int, Events], now: float, seconds: int) -> Events:
    """The events of the last ``seconds``: the current minute and the ``seconds / 60 - 1``
    minutes before it (windows are whole minutes: at most one minute short of ``seconds``)."""
    first = minute_of(now) - (seconds - MINUTE)
    total = Events()
    for minute, events in minutes.items():
        if minute >= first:
            total += events
    return total


@dataclass(frozen=True, slots=True)
class BurnRates:
    """An objective's burn rate over each of :data:`BURN_WINDOWS`, and the two alerts' values."""

    rates: Mapping[str, float]

    @property
    def fast(self) -> float:
        return min(self.rates[w] for w in FAST)

    @property
    def slow(self) -> float:
        return min(self.rates[w] for w in SLOW)


def burn_rates(minutes: Mapping[int, Events], now: float, target: float) -> BurnRates:
    return BurnRates(
        {
            name: burn_rate(window_events(minutes, now, seconds), target)
            for name, seconds in BURN_WINDOWS.items()
        }
    )


def series_step(first: int, last: int, points: int) -> int:
    """Whole minutes per step so that ``first .. last`` fits in ``points`` steps."""
    minutes = (last - first) // MINUTE + 1
    return max(1, -(-minutes // max(1, points))) * MINUTE


def series(
    minutes: Sequence[tuple[int, Events]], target: float, step: int
) -> list[tuple[int, float, float]]:
    """``(start, budget left at its end, burn rate)`` of each ``step`` seconds over ``minutes``
    (sorted by minute; the budget counts from the first minute): the console's charts."""
    out: list[tuple[int, float, float]] = []
    if not minutes:
        return out
    running, current, start = Events(), Events(), minutes[0][0]
    for minute, events in minutes:
        if minute >= start + step:
            out.append((start, budget_remaining(running, target), burn_rate(current, target)))
            start += ((minute - start) // step) * step
            current = Events()
        running += events
        current += events
    out.append((start, budget_remaining(running, target), burn_rate(current, target)))
    return out


def total_of(events: Iterable[Events]) -> Events:
    total = Events()
    for one in events:
        total += one
    return total
