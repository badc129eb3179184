"""Bodies of ``/api/v1/slos``: service level objectives (issue 33 item 6, ADR 055)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from pushgrid.protocol.subjects import pattern_error

from .schemas import MemberName
from .slo import ObjectiveKind

ObjectiveName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,47}$"),
    Field(examples=["delivery_p99_under_100ms"]),
]
Target = Annotated[
    float,
    Field(
        gt=0.0,
        lt=1.0,
        allow_inf_nan=False,
        description="The share of events that must be good, e.g. 0.99 (below 1: an objective "
        "of 100 % has no error budget to burn)",
        examples=[0.99],
    ),
]
PeriodDays = Annotated[int, Field(ge=1, le=90, description="Days the budget covers")]
ThresholdMs = Annotated[
    float,
    Field(
        gt=0.0,
        le=100_000.0,
        allow_inf_nan=False,
        description="latency only: a delivery is good at or under it (judged at the largest "
        "bucket edge at or under it: threshold_edge_ms)",
        examples=[100.0],
    ),
]
Description = Annotated[str, StringConstraints(max_length=1024)]
#: the kinds the members count per watched pattern (the clients' latency and loss reports)
PATTERN_KINDS: Final = ("latency", "loss")


def _pattern(value: str) -> str:
    problem = pattern_error(value)
    if problem is not None:
        raise ValueError(problem)
    return value


WatchedPatternName = Annotated[
    str, StringConstraints(max_length=1024), AfterValidator(_pattern), Field(examples=["/Stocks/*"])
]


class SloIn(BaseModel):
    """An objective: ``target`` of the ``kind``'s events good over ``period_days``."""

    model_config = ConfigDict(extra="forbid")

    name: ObjectiveName = Field(description="Letters, digits, '_', '-', '.'; unique")
    kind: ObjectiveKind = Field(
        description="latency: deliveries at or under threshold_ms; loss: deliveries the "
        "clients did not lose; recovery: recoveries answered from the cache; subscribe: "
        "subscriptions the members opened (not failed for want of quorum or an engine error)"
    )
    target: Target
    period_days: PeriodDays = 30
    threshold_ms: ThresholdMs | None = None
    member: MemberName | None = Field(
        None,
        description="Count only the events of this member's clients (null: the whole cluster, "
        "every member's added); a member not listed now counts nothing until it is",
    )
    pattern: WatchedPatternName | None = Field(
        None,
        description="latency and loss only: count only the deliveries of subjects this "
        "watched pattern matches (as the members count them for GET /watched-subjects; null: "
        "every subject). Events count while the pattern is watched",
    )
    description: Description = ""

    @model_validator(mode="after")
    def _threshold(self) -> SloIn:
        if self.kind == "latency" and self.threshold_ms is None:
            raise ValueError("threshold_ms is required for a latency objective")
        if self.kind != "latency" and self.threshold_ms is not None:
            raise ValueError(f"threshold_ms applies to latency objectives only, not {self.kind}")
        if self.pattern is not None and self.kind not in PATTERN_KINDS:
            raise ValueError(
                f"pattern applies to latency and loss objectives only, not {self.kind}"
            )
        return self


class SloPatch(BaseModel):
    """Fields to change; the objective as a whole is checked again (its events are kept: a
    changed threshold or target applies from the next minute on)."""

    model_config = ConfigDict(extra="forbid")

    name: ObjectiveName | None = None
    target: Target | None = None
    period_days: PeriodDays | None = None
    threshold_ms: ThresholdMs | None = None
    member: MemberName | None = None
    pattern: WatchedPatternName | None = None
    description: Description | None = None


class SloStatus(BaseModel):
    """Where the objective stands now."""

    good: int = Field(description="Good events over the period (so far)")
    total: int = Field(description="Events over the period (so far)")
    ratio: float | None = Field(description="good / total; null without events")
    budget_remaining: float = Field(
        description="Share of the error budget left: 1 untouched, 0 spent, below 0 overspent"
    )
    burn_rates: dict[str, float] = Field(
        description="Window (5m, 30m, 1h, 6h) -> its bad share over 1 - target (1: the budget "
        "lasts exactly the period)"
    )
    fast_burn: float = Field(description="min(1h, 5m): what SLOFastBurn compares with 14.4")
    slow_burn: float = Field(description="min(6h, 30m): what SLOSlowBurn compares with 6")
    since: datetime | None = Field(description="The first minute with events in the period")


class SloOut(SloIn):
    id: int
    alert_target: str = Field(description="The target of its burn-rate alerts: slo:<name>")
    threshold_edge_ms: float | None = Field(
        description="latency: the bucket edge the threshold is judged at (the largest at or "
        "under threshold_ms)"
    )
    created_at: datetime
    created_by: str | None
    status: SloStatus


class SloList(BaseModel):
    items: list[SloOut]


class SloPoint(BaseModel):
    at: datetime = Field(description="Start of the step")
    budget_remaining: float = Field(description="Budget left at the end of the step")
    burn_rate: float = Field(description="The step's burn rate")


class SloHistory(BaseModel):
    """The objective over its period, in at most `points` steps of whole minutes."""

    id: int
    name: str
    step_seconds: int
    points: list[SloPoint]
