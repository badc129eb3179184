"""Bodies of the operators' features (issue 17): hot subjects, alert rules, live trace."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from pushgrid.ops.alerts import SIGNALS, RuleWindow, SignalName

from .alerting import hysteresis_ok
from .schemas import IndicatorName, SessionOut, SlowConsumerOut, Subject

# --- hot subjects ------------------------------------------------------------------------------

RankingName = Literal["messages_in", "messages_out", "bytes_out", "subscribers"]


class HotEntry(BaseModel):
    subject: str
    value: float = Field(description="Estimated rate per second (subscribers: the count)")
    error: float = Field(ge=0, description="The value over-estimates the truth by at most this")
    history: list[float] = Field(default_factory=list, description="Last per-second estimates")


class MemberHot(BaseModel):
    member: str
    reachable: bool
    error: str | None = None
    sample_time: datetime | None = None
    top_n: int = 0
    error_bounds: dict[str, float] = Field(default_factory=dict)
    rankings: dict[RankingName, list[HotEntry]] = Field(default_factory=dict)


class ClusterHot(BaseModel):
    top_n: int
    rankings: dict[RankingName, list[HotEntry]]


class HotSubjects(BaseModel):
    at: datetime
    cluster: ClusterHot = Field(description="The members' rankings summed per subject")
    members: list[MemberHot]


# --- alert rules -------------------------------------------------------------------------------

RuleStat = Literal["max", "avg", "stddev"]
Comparison = Literal[">", ">=", "<", "<=", "==", "!="]
Severity = Literal["info", "warning", "critical"]
Scope = Literal["member", "cluster"]
AlertState = Literal["pending", "firing", "resolved"]
RuleName = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$"), Field(examples=["HighFanout"])
]


class RuleIn(BaseModel):
    """An alert rule: ``stat(indicator over window) comparison threshold``, averaged over
    ``for`` seconds, cleared with hysteresis (``clear_threshold``, ``clear_for``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: RuleName = Field(description="Letters, digits, '_'; a Prometheus alert name")
    indicator: IndicatorName | SignalName = Field(
        description="One of the seven indicators, or a built-in signal (docs/alerts.md)"
    )
    window: RuleWindow = Field(
        default="current",
        description="'current' (last per-second sample) or a live window; signals: 'current'",
    )
    stat: RuleStat = Field(default="max", description="Ignored for window 'current'")
    comparison: Comparison = ">"
    threshold: float = Field(allow_inf_nan=False)
    for_: float = Field(
        default=0,
        ge=0,
        le=86_400,
        alias="for",
        description="Seconds averaged: the rule compares the average of its value over them",
    )
    clear_threshold: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Hysteresis: the alert clears once its average no longer holds "
        "'comparison clear_threshold' (on the quiet side of threshold; default: threshold)",
    )
    clear_for: float | None = Field(
        default=None,
        ge=0,
        le=86_400,
        description="Seconds the clear condition must hold before the alert resolves "
        "(default: for)",
    )
    severity: Severity = "warning"
    scope: Scope = Field(
        default="member",
        description="member: one alert per member; cluster: the members' values summed",
    )
    description: Annotated[str, StringConstraints(max_length=1024)] = ""
    enabled: bool = True

    @model_validator(mode="after")
    def _coherent(self) -> RuleIn:
        if not hysteresis_ok(self.comparison, self.threshold, self.clear_threshold):
            raise ValueError(
                f"clear_threshold {self.clear_threshold:g} is not on the quiet side of "
                f"'{self.comparison} {self.threshold:g}'"
            )
        if self.indicator in SIGNALS:
            if self.window != "current":
                raise ValueError(f"signal {self.indicator} has window 'current' only")
            only = SIGNALS[self.indicator][1]
            if only and self.scope != only:
                raise ValueError(f"signal {self.indicator} has scope {only!r} only")
        return self


class RuleOut(RuleIn):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    id: int
    builtin: bool = Field(default=False, description="One of the built-in rules (docs/alerts.md)")
    created_at: datetime
    created_by: str | None


class RulePatch(BaseModel):
    """Some fields of a rule (``PATCH``): the others keep their values."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: RuleName | None = None
    indicator: IndicatorName | SignalName | None = None
    window: RuleWindow | None = None
    stat: RuleStat | None = None
    comparison: Comparison | None = None
    threshold: float | None = Field(default=None, allow_inf_nan=False)
    for_: float | None = Field(default=None, ge=0, le=86_400, alias="for")
    clear_threshold: float | None = Field(default=None, allow_inf_nan=False)
    clear_for: float | None = Field(default=None, ge=0, le=86_400)
    severity: Severity | None = None
    scope: Scope | None = None
    description: Annotated[str, StringConstraints(max_length=1024)] | None = None
    enabled: bool | None = None


class RuleList(BaseModel):
    items: list[RuleOut]


class AlertOut(BaseModel):
    """One alert: a rule on one target (a member's name, or ``cluster``)."""

    rule_id: int
    rule: str
    target: str
    state: AlertState
    severity: Severity
    value: float | None = Field(description="The rule's value averaged over its for seconds")
    threshold: float
    since: datetime = Field(description="When it entered this state")
    summary: str
    silenced_until: datetime | None = Field(
        default=None, description="Not announced until then (a silence of its rule)"
    )
    acknowledged_by: str | None = None
    acknowledged_at: datetime | None = None


class SilenceIn(BaseModel):
    """Silence a rule's alerts (on one target, or on all) until a time."""

    model_config = ConfigDict(extra="forbid")

    rule_id: int = Field(ge=1, le=2**31 - 1)
    target: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = Field(
        default=None, description="A member's name or 'cluster'; none: every target"
    )
    until: datetime = Field(description="When announcements start again (ISO 8601 with offset)")
    comment: Annotated[str, StringConstraints(max_length=1024)] = ""


class SilenceOut(SilenceIn):
    id: int
    rule: str
    created_at: datetime
    created_by: str | None


class SilenceList(BaseModel):
    items: list[SilenceOut]


class AckIn(BaseModel):
    """Acknowledge an active alert: it stays active (and listed) but leaves the banner."""

    model_config = ConfigDict(extra="forbid")

    rule_id: int = Field(ge=1, le=2**31 - 1)
    target: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    comment: Annotated[str, StringConstraints(max_length=1024)] = ""


class AckOut(AckIn):
    at: datetime
    by: str | None


class AlertList(BaseModel):
    items: list[AlertOut]


class AlertEventOut(BaseModel):
    id: int
    at: datetime
    rule_id: int
    rule: str
    target: str
    state: AlertState
    value: float | None
    summary: str
    previous_at: datetime | None = Field(
        default=None, description="The alert's previous state change (null: its first)"
    )
    duration: float | None = Field(
        default=None,
        description="Seconds the alert was in its previous state (a resolved event: how long "
        "it was firing); null for its first change",
    )


class AlertHistory(BaseModel):
    total: int = Field(default=0, ge=0, description="Changes matching the filters (all pages)")
    offset: int = Field(default=0, ge=0)
    limit: int = Field(default=100, ge=1)
    items: list[AlertEventOut]


# --- live trace --------------------------------------------------------------------------------


class TraceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: Subject
    entitlement_token: Annotated[str, StringConstraints(max_length=8192)] | None = Field(
        default=None,
        description="For members with Entitlement = jwt: a JWT allowed to subscribe to the "
        "subject. The trace subscribes with it, so the member enforces it; not stored",
    )


class TraceMessage(BaseModel):
    index: int = Field(description="Position in the trace (0, 1, ...); poll with after=")
    received_at: datetime
    subject: str
    kind: str = Field(description="snapshot, update, recovered or historical")
    seq: int
    epoch: str
    size: int = Field(description="Bytes of content and fields (UTF-8)")
    content: str
    fields: dict[str, str]
    retained: bool


class TraceOut(BaseModel):
    id: str
    member: str
    subject: str
    created_at: datetime
    created_by: str
    status: str = Field(description="connecting, live, denied, closed or failed (with error)")
    error: str | None = None
    buffer_size: int
    dropped: int = Field(description="Messages dropped from the buffer (oldest first)")
    next_index: int
    messages: list[TraceMessage] = Field(default_factory=list)


class SessionDetail(SessionOut):
    """One client: what the Clients list shows, the last frames sent to it and the member's
    slow-consumer closes of the same client id (or, without one, the same host)."""

    last_frames: list[dict[str, Any]] = Field(
        description="The last frames sent to the session, newest last: at (ms since the Unix "
        "epoch), size, text (cut at 2 KiB; null with redacted when entitlement hides it)"
    )
    slow_consumers: list[SlowConsumerOut] = Field(
        default_factory=list,
        description="This member's slow-consumer closes of the same client (newest first)",
    )
    delivery: dict[str, Any] | None = Field(
        default=None,
        description="What the session's client reported (docs/monitoring.md, 'Delivery latency "
        "and loss'): latency_count, latency_p50/p90/p99/p999 (s), loss, reports, last_report, "
        "clock_offset_us, rtt_us; null from a member that does not say",
    )


class MemberTraceIn(BaseModel):
    """A trace by client id or subject, recorded inside the members (not a subscriber)."""

    model_config = ConfigDict(extra="forbid")

    by: Literal["client", "subject"]
    value: Annotated[str, StringConstraints(min_length=1, max_length=1024)] = Field(
        description="The client id (exactly) or the subject to follow"
    )
    member: Annotated[str, StringConstraints(max_length=255)] | None = Field(
        default=None, description="One member; null: every member of the cluster"
    )


class MemberTraceEvent(BaseModel):
    index: int = Field(description="Position in the trace (0, 1, ...); read with after=")
    member: str
    at: datetime = Field(description="When the member recorded it (millisecond precision)")
    direction: Literal["in", "out"] = Field(description="out: sent by the member; in: by a client")
    session: str = Field(description="The session; empty for a subject trace's fan-out")
    client_id: str
    subject: str
    size: int = Field(description="Bytes of the frame's payload")
    text: str = Field(description="The payload (cut at 2 KiB)")


class MemberTraceState(BaseModel):
    member: str
    error: str | None = Field(description="Why the member is not followed now (null: it is)")
    dropped: int = Field(description="Events the member's own ring dropped (10,000 kept)")


class MemberTraceOut(BaseModel):
    id: str
    kind: Literal["client", "subject"]
    value: str
    created_at: datetime
    created_by: str
    members: list[MemberTraceState]
    ring_size: int
    dropped: int = Field(description="Events dropped from the admin API's ring (oldest first)")
    next_index: int
    events: list[MemberTraceEvent] = Field(default_factory=list)


# --- watched subjects --------------------------------------------------------------------------

WatchOutcome = Literal["watched", "already_watched", "removed", "not_watched", "refused", "failed"]


class WatchedWindow(BaseModel):
    max: float | None = None
    avg: float | None = None
    stddev: float | None = None
    count: int = 0


class WatchedIndicator(BaseModel):
    current: float
    unit: str
    windows: dict[str, WatchedWindow] = Field(default_factory=dict)


class WatchedPattern(BaseModel):
    pattern: str
    source: str = Field(description="config (WatchedSubjects.Patterns) or runtime (admin API)")
    sample_time: int = Field(description="UTC second of the last per-second values")
    windows_time: int = Field(description="UTC second the windows were read for")
    totals: dict[str, int] = Field(
        description="messages_in_total, messages_out_total, bytes_in_total, bytes_out_total"
    )
    subscribers: int
    subjects: int
    indicators: dict[str, WatchedIndicator]


class MemberWatched(BaseModel):
    member: str
    reachable: bool
    error: str | None = None
    max_patterns: int = 0
    patterns: list[WatchedPattern] = Field(default_factory=list)


class ClusterWatchedPattern(BaseModel):
    pattern: str
    members: int = Field(description="Reachable members watching the pattern")
    totals: dict[str, int]
    subscribers: int
    current: dict[str, float] = Field(
        description="Last per-second values summed over members; `subjects` is the largest "
        "member's count (members share subjects)"
    )


class WatchedSubjects(BaseModel):
    at: datetime
    cluster: list[ClusterWatchedPattern] = Field(
        description="Per pattern, the members' totals, subscribers and last rates summed "
        "(incoming is counted once in the cluster, outgoing per member that delivered)"
    )
    members: list[MemberWatched]


class WatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(max_length=1024, examples=["/Stocks/NYSE/*"])


class MemberWatchResult(BaseModel):
    member: str
    outcome: WatchOutcome
    detail: str | None = None


class WatchChange(BaseModel):
    pattern: str
    members: list[MemberWatchResult]
