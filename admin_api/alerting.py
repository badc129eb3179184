"""Alert rules, evaluated (pure code: no database, no network; docs/alerts.md).

A rule reads one number per target: ``stat`` of ``indicator`` over ``window`` (``current`` is the
last per-second sample), or a built-in *signal* (:data:`SIGNALS`: member down, quorum lost, ...),
on each member (scope ``member``: one alert per member) or summed over the reachable members
(scope ``cluster``: one alert, target ``cluster``).

Each evaluation adds the target's number to its :class:`Window` (the last ``for`` seconds) and
compares the window's **average** with the rule, with **hysteresis**:

=============  ===================================================================================
state          next
=============  ===================================================================================
(inactive)     ``firing`` when the average holds ``comparison threshold``; nothing is decided
               before the target has been read for ``for`` seconds (a partial window)
firing         ``resolved`` once the average has cleared for ``clear_for`` seconds (default:
               ``for``); it clears when it no longer holds ``comparison clear_threshold``
               (default: the threshold)
=============  ===================================================================================

``pending`` is a state of the alerts recorded by earlier versions (which fired after the condition
held ``for`` seconds): one taken back at start fires or resolves at its first full window.

So a value jittering around a steady level fires at most once and never flaps while the jitter of
its average stays inside the gap between ``threshold`` and ``clear_threshold`` (property-tested).
A target with no value (member unreachable, window still empty) keeps its state: missing data
neither fires nor resolves an alert. :meth:`Evaluator.evaluate` returns the state changes, which
the runner records in ``alert_events`` and announces.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from pushgrid.ops.alerts import CLUSTER

State = Literal["pending", "firing", "resolved"]
#: a window keeps at most this many buckets of samples, whatever its span (bounded memory)
MAX_BUCKETS: Final = 512

COMPARISONS: Final[dict[str, Callable[[float, float], bool]]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}

# Built-in signals a rule can read instead of an indicator: pushgrid/ops/alerts.py (SIGNALS).


@dataclass(frozen=True, slots=True)
class Rule:
    id: int
    name: str
    indicator: str  # an indicator or a signal (SIGNALS)
    window: str  # "current" or a live window name
    stat: str  # max | avg | stddev (ignored for "current")
    comparison: str
    threshold: float
    for_seconds: float
    severity: str
    scope: str  # member | cluster
    description: str = ""
    clear_threshold: float | None = None  # None: the threshold
    clear_for: float | None = None  # None: for_seconds

    def describe(self) -> str:
        what = (
            self.indicator
            if self.window == "current"
            else (f"{self.stat}({self.indicator} over {self.window})")
        )
        if self.for_seconds > 0:
            what = f"avg_{self.for_seconds:g}s({what})"
        return f"{what} {self.comparison} {self.threshold:g}"

    @property
    def clear_at(self) -> float:
        return self.threshold if self.clear_threshold is None else self.clear_threshold

    @property
    def clear_seconds(self) -> float:
        return self.for_seconds if self.clear_for is None else self.clear_for

    def holds(self, value: float) -> bool:
        """The fire condition."""
        return COMPARISONS[self.comparison](value, self.threshold)

    def clears(self, value: float) -> bool:
        """The clear condition: the comparison no longer holds against the clear threshold."""
        return not COMPARISONS[self.comparison](value, self.clear_at)


def hysteresis_ok(comparison: str, threshold: float, clear_threshold: float | None) -> bool:
    """A clear threshold lies on the quiet side of the threshold (or equals it)."""
    if clear_threshold is None or clear_threshold == threshold:
        return True
    if comparison in (">", ">="):
        return clear_threshold < threshold
    if comparison in ("<", "<="):
        return clear_threshold > threshold
    return False  # == and != have no side


@dataclass(slots=True)
class AlertWindow:
    """The samples of one target for one rule over the last ``span`` seconds, averaged.

    Samples are summed into at most :data:`MAX_BUCKETS` buckets of ``span / MAX_BUCKETS``
    seconds, so a day-long window costs what a 10-second one does; the average is exact for
    samples at most one sample per bucket apart and off by one bucket at the window's edge.
    """

    span: float
    first_seen: float
    buckets: deque[list[float]] = field(default_factory=deque)  # [start, sum, count]

    def add(self, now: float, value: float) -> None:
        width = self.span / MAX_BUCKETS
        last = self.buckets[-1] if self.buckets else None
        if last is not None and width > 0 and now - last[0] < width:
            last[1] += value
            last[2] += 1
        else:
            self.buckets.append([now, value, 1.0])
        while len(self.buckets) > 1 and self.buckets[0][0] <= now - self.span:
            self.buckets.popleft()

    def average(self) -> float:
        total = sum(b[1] for b in self.buckets)
        count = sum(b[2] for b in self.buckets)
        return total / count if count else math.nan

    def full(self, now: float) -> bool:
        """The target has been read for the whole span (its average means what it says)."""
        return now - self.first_seen >= self.span


# target -> (indicator, window, stat) -> value; "current" values and signals use stat "current".
Readings = Mapping[str, Mapping[tuple[str, str, str], float | None]]


def reading_key(rule: Rule) -> tuple[str, str, str]:
    stat = "current" if rule.window == "current" else rule.stat
    return rule.indicator, rule.window, stat


def cluster_readings(members: Readings) -> dict[tuple[str, str, str], float | None]:
    """The sum over members of every reading (None when no member has it)."""
    out: dict[tuple[str, str, str], float | None] = {}
    for readings in members.values():
        for key, value in readings.items():
            if value is None or not math.isfinite(value):
                out.setdefault(key, None)
                continue
            previous = out.get(key)
            out[key] = value if previous is None else previous + value
    return out


@dataclass(slots=True)
class Alert:
    rule: Rule
    target: str
    state: State
    since: float  # when it entered this state (Unix seconds)
    active_since: float  # when the condition started holding
    value: float | None  # the windowed value (average over the rule's for seconds)
    clearing_since: float | None = None  # firing, and the clear condition holds since then

    def summary(self) -> str:
        shown = "no value" if self.value is None else f"{self.value:g}"
        if self.state == "firing" and self.clearing_since is not None:
            # hysteresis: "firing (value 0)" alone reads like a bug to an operator
            shown += f", clearing: resolves after {self.rule.clear_seconds:g} s past the clear line"
        return f"{self.rule.name} on {self.target}: {self.rule.describe()} (value {shown})"


@dataclass(frozen=True, slots=True)
class AlertChange:
    """One state change to record and announce."""

    alert: Alert
    state: State
    at: float


@dataclass
class Evaluator:
    """The alerts and windows of every rule and target, kept between evaluations."""

    alerts: dict[tuple[int, str], Alert] = field(default_factory=dict)
    windows: dict[tuple[int, str], AlertWindow] = field(default_factory=dict)

    def active(self) -> list[Alert]:
        """Pending and firing alerts, firing first, then by rule and target."""
        order = {"firing": 0, "pending": 1}
        return sorted(self.alerts.values(), key=lambda a: (order[a.state], a.rule.name, a.target))

    def evaluate(
        self,
        rules: Sequence[Rule],
        members: Readings,
        now: float,
        cluster_extra: Mapping[tuple[str, str, str], float | None] | None = None,
    ) -> list[AlertChange]:
        """``cluster_extra``: readings of the cluster itself (not a sum of members)."""
        changes: list[AlertChange] = []
        cluster = {**cluster_readings(members), **(cluster_extra or {})}
        seen: set[tuple[int, str]] = set()
        for rule in rules:
            key = reading_key(rule)
            targets: Iterable[tuple[str, float | None]] = (
                [(CLUSTER, cluster.get(key))]
                if rule.scope == CLUSTER
                else ((name, readings.get(key)) for name, readings in members.items())
            )
            for target, value in targets:
                seen.add((rule.id, target))
                changes.extend(self._step(rule, target, value, now))
        for gone in [k for k in self.windows if k not in seen]:
            del self.windows[gone]
        for gone in [k for k in self.alerts if k not in seen]:  # rule deleted or member removed
            alert = self.alerts.pop(gone)
            changes.append(AlertChange(_resolved(alert, now), "resolved", now))
        return changes

    def _window(self, rule: Rule, target: str, now: float) -> AlertWindow:
        window = self.windows.get((rule.id, target))
        if window is None or window.span != rule.for_seconds:  # new, or the rule was edited
            window = AlertWindow(rule.for_seconds, now)
            self.windows[(rule.id, target)] = window
        return window

    def _step(self, rule: Rule, target: str, value: float | None, now: float) -> list[AlertChange]:
        key = (rule.id, target)
        alert = self.alerts.get(key)
        if alert is not None:
            alert.rule = rule  # a rule edited in place keeps its alerts
        if value is None or not math.isfinite(value):
            return []
        window = self._window(rule, target, now)
        window.add(now, value)
        if not window.full(now):  # an average over less than `for` seconds decides nothing
            return []
        average = window.average()
        if alert is None:
            if not rule.holds(average):
                return []
            alert = Alert(rule, target, "firing", now, now, average)
            self.alerts[key] = alert
            return [AlertChange(alert, "firing", now)]
        alert.value = average
        if alert.state == "pending":  # taken back from an older admin API
            return self._pending(alert, now)
        return self._firing(alert, now)

    def _pending(self, alert: Alert, now: float) -> list[AlertChange]:
        if alert.rule.clears(alert.value or 0.0):
            return [self._resolve(alert, now)]
        if alert.rule.holds(alert.value or 0.0):
            alert.state, alert.since = "firing", now
            return [AlertChange(alert, "firing", now)]
        return []

    def _firing(self, alert: Alert, now: float) -> list[AlertChange]:
        if not alert.rule.clears(alert.value or 0.0):
            alert.clearing_since = None
            return []
        if alert.clearing_since is None:
            alert.clearing_since = now
        if now - alert.clearing_since >= alert.rule.clear_seconds:
            return [self._resolve(alert, now)]
        return []

    def _resolve(self, alert: Alert, now: float) -> AlertChange:
        del self.alerts[(alert.rule.id, alert.target)]
        return AlertChange(_resolved(alert, now), "resolved", now)


def _resolved(alert: Alert, now: float) -> Alert:
    return Alert(alert.rule, alert.target, "resolved", now, alert.active_since, alert.value)
