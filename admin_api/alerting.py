"""Alert rules, evaluated (pure code: no database, no network; docs/alerts.md).

A rule reads one number per target: ``stat`` of ``indicator`` over ``window`` (``current`` is the
last per-second sample) on each member (scope ``member``: one alert per member) or summed over
the reachable members (scope ``cluster``: one alert, target ``cluster``). Each evaluation moves
every alert through the states of Prometheus:

=============  ====================  ==================================================
state          condition true         condition false
=============  ====================  ==================================================
(inactive)     pending (or firing      -
               at once when for = 0)
pending        firing once it has      resolved (it never fired)
               held ``for`` seconds
firing         firing                 resolved
=============  ====================  ==================================================

A target with no value (member unreachable, window still empty) keeps its state: missing data
neither fires nor resolves an alert. :meth:`Evaluator.evaluate` returns the state changes, which
the runner records in ``alert_events`` and announces.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

State = Literal["pending", "firing", "resolved"]
CLUSTER: Final = "cluster"

COMPARISONS: Final[dict[str, Callable[[float, float], bool]]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}


@dataclass(frozen=True, slots=True)
class Rule:
    id: int
    name: str
    indicator: str
    window: str  # "current" or a live window name
    stat: str  # max | avg | stddev (ignored for "current")
    comparison: str
    threshold: float
    for_seconds: float
    severity: str
    scope: str  # member | cluster
    description: str = ""

    def describe(self) -> str:
        what = (
            self.indicator
            if self.window == "current"
            else (f"{self.stat}({self.indicator} over {self.window})")
        )
        return f"{what} {self.comparison} {self.threshold:g}"

    def holds(self, value: float) -> bool:
        return COMPARISONS[self.comparison](value, self.threshold)


# target -> (indicator, window, stat) -> value; "current" values use stat "current".
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
    value: float | None

    def summary(self) -> str:
        shown = "no value" if self.value is None else f"{self.value:g}"
        return f"{self.rule.name} on {self.target}: {self.rule.describe()} (value {shown})"


@dataclass(frozen=True, slots=True)
class Change:
    """One state change to record and announce."""

    alert: Alert
    state: State
    at: float


@dataclass
class Evaluator:
    """The alerts of every rule and target, kept between evaluations."""

    alerts: dict[tuple[int, str], Alert] = field(default_factory=dict)

    def active(self) -> list[Alert]:
        """Pending and firing alerts, firing first, then by rule and target."""
        order = {"firing": 0, "pending": 1}
        return sorted(self.alerts.values(), key=lambda a: (order[a.state], a.rule.name, a.target))

    def evaluate(self, rules: Sequence[Rule], members: Readings, now: float) -> list[Change]:
        changes: list[Change] = []
        cluster = cluster_readings(members)
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
        for gone in [k for k in self.alerts if k not in seen]:  # rule deleted or member removed
            alert = self.alerts.pop(gone)
            changes.append(Change(_resolved(alert, now), "resolved", now))
        return changes

    def _step(self, rule: Rule, target: str, value: float | None, now: float) -> list[Change]:
        key = (rule.id, target)
        alert = self.alerts.get(key)
        if alert is not None:
            alert.rule = rule  # a rule edited in place keeps its alerts
        if value is None or not math.isfinite(value):
            return []
        if rule.holds(value):
            if alert is None:
                state: State = "firing" if rule.for_seconds <= 0 else "pending"
                alert = Alert(rule, target, state, now, now, value)
                self.alerts[key] = alert
                return [Change(alert, state, now)]
            alert.value = value
            if alert.state == "pending" and now - alert.active_since >= rule.for_seconds:
                alert.state, alert.since = "firing", now
                return [Change(alert, "firing", now)]
            return []
        if alert is None:
            return []
        alert.value = value
        del self.alerts[key]
        return [Change(_resolved(alert, now), "resolved", now)]


def _resolved(alert: Alert, now: float) -> Alert:
    return Alert(alert.rule, alert.target, "resolved", now, alert.active_since, alert.value)
