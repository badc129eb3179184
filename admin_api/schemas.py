"""Request and response bodies of the admin API (Pydantic; they are the OpenAPI schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

# the answers the console reads too live in the ops contract (ADR 059); re-exported here
from pushgrid.ops.api.audit import AuditOut as AuditOut
from pushgrid.ops.api.cluster import ClusterMemberOut as ClusterMemberOut
from pushgrid.ops.api.cluster import ClusterOut as ClusterOut
from pushgrid.ops.api.cluster import HealthReasonOut as HealthReasonOut
from pushgrid.ops.api.history import MAX_UNIX as MAX_UNIX
from pushgrid.ops.api.history import HistoryOut as HistoryOut
from pushgrid.ops.api.history import HistorySeriesOut as HistorySeriesOut
from pushgrid.ops.api.history import IndicatorName as IndicatorName
from pushgrid.ops.api.history import UnixSeconds as UnixSeconds
from pushgrid.ops.api.jobs import JobRunOut as JobRunOut
from pushgrid.ops.api.jobs import StageOut as StageOut
from pushgrid.ops.api.me import Me as Me
from pushgrid.ops.api.sessions import MemberError as MemberError
from pushgrid.ops.api.sessions import Page as Page
from pushgrid.ops.api.sessions import SessionOut as SessionOut
from pushgrid.ops.api.sessions import SessionPage as SessionPage
from pushgrid.ops.api.sessions import SessionTransport as SessionTransport
from pushgrid.ops.api.subjects import PresenceOut as PresenceOut
from pushgrid.ops.api.subjects import PresentClientOut as PresentClientOut
from pushgrid.ops.api.subjects import PublishOut as PublishOut
from pushgrid.ops.api.subjects import SnapshotOut as SnapshotOut
from pushgrid.ops.api.subjects import SubjectInfo as SubjectInfo
from pushgrid.ops.api.trends import TrendPointOut as TrendPointOut
from pushgrid.ops.api.trends import TrendSeries as TrendSeries
from pushgrid.ops.panel import MemberPanel
from pushgrid.ops.workers import WorkerProcess

from .member_client import MemberSource, check_base_url, check_monitor_url
from .security import Role

MEMBER_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
SUBJECT_PATTERN: Final = r"^/[^/\x00-\x1f\x7f-\x9f]+(/[^/\x00-\x1f\x7f-\x9f]+)+$"
MAX_SUBJECT_LENGTH: Final = 1024

MemberName = Annotated[
    str,
    StringConstraints(pattern=MEMBER_NAME_PATTERN),
    Field(description="Letters, digits, '.', '_', '-'; 1-64 characters", examples=["push-2"]),
]
BaseUrl = Annotated[
    str,
    StringConstraints(min_length=8, max_length=2048),
    AfterValidator(check_base_url),
]
MonitorUrl = Annotated[
    str,
    StringConstraints(min_length=8, max_length=2048),
    AfterValidator(check_monitor_url),
]
Subject = Annotated[
    str,
    StringConstraints(pattern=SUBJECT_PATTERN, max_length=MAX_SUBJECT_LENGTH),
    Field(description="A subject: '/' and two or more segments", examples=["/Stocks/NYSE/IBM"]),
]
WindowName = Literal["1m", "5m", "15m", "1h", "5h", "15h", "1d", "5d", "15d", "1mo", "5mo", "15mo"]


# --- members -----------------------------------------------------------------------------------


class MemberCreate(BaseModel):
    """A server to manage: its monitoring URL and optional Basic credentials for it."""

    model_config = ConfigDict(extra="forbid")

    name: MemberName
    monitor_url: MonitorUrl = Field(
        description="Base URL of the member's monitoring port (its Jolokia agent is at "
        "<monitor_url>/jolokia), or the JMX URL of its bridge "
        "(service:jmx:rmi:///jndi/rmi://host:port/jmxrmi)",
        examples=["http://10.0.0.2:8900"],
    )
    client_url: BaseUrl | None = Field(
        default=None,
        description="Base URL of the member's client port, for the test publish; when absent it "
        "is derived from the member's Listen setting",
        examples=["http://10.0.0.2:8800"],
    )
    username: Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = None
    password: Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = Field(
        default=None, description="Kept server-side; never returned"
    )


class MemberPanelOut(MemberPanel):
    """The member's operator panel (MBean ``pushgrid:type=MemberPanel``; docs/monitoring.md,
    "Member panel"). Window numbers cover the last ``window_seconds``; null: not measured yet
    or not applicable (``replica_lag_max`` without a JetStream stream)."""

    # The contract's one panel type (pushgrid/ops/panel.py) under the schema name the OpenAPI
    # document has always used: no field of its own.


class MemberOut(BaseModel):
    """A member and what its Jolokia agent says about it right now."""

    name: str
    source: MemberSource = Field(
        description="config: from Admin.Members (read-only); registered: through the API; "
        "discovered: reported by another member's cluster view"
    )
    monitor_url: str
    client_url: str | None = Field(
        description="Where the test publish goes (given at registration, or derived from the "
        "member's Listen setting; null when unknown)"
    )
    has_credentials: bool = Field(description="Whether Basic credentials are used (never shown)")
    created_at: datetime | None = None
    reachable: bool
    error: str | None = Field(default=None, description="Why the member could not be read")
    not_answering_seconds: float | None = Field(
        default=None,
        description="Seconds since the member stopped answering (a hung process): it is not "
        "asked again until it answers the admin API's watch; null while it answers",
    )
    server_name: str | None = None
    version: str | None = None
    uptime_seconds: float | None = None
    started_at: datetime | None = None
    engine: str | None = None
    delivery_mode: str | None = None
    connected_users: int | None = None
    subscriptions: int | None = None
    panel: MemberPanelOut | None = Field(
        default=None, description="The operator panel (null: not readable from this member)"
    )
    processes: list[WorkerProcess] | None = Field(
        default=None,
        description="The processes that serve the member (Workers; one with Workers = 1), "
        "worker 0 first (null: not readable from this member)",
    )


class MemberNames(BaseModel):
    items: list[str] = Field(description="Configured, then registered members")


class MemberList(BaseModel):
    items: list[MemberOut]
    reachable: int = Field(ge=0)
    unreachable: int = Field(ge=0)


# --- live statistics ---------------------------------------------------------------------------


class WindowValue(BaseModel):
    """Statistics of one window; ``max``/``avg``/``stddev`` are null while it holds no sample."""

    max: float | None
    avg: float | None
    stddev: float | None
    count: int = Field(ge=0, description="Samples (seconds) in the window")


class LiveIndicator(BaseModel):
    name: IndicatorName
    current: float | None = Field(description="The last per-second sample")
    windows: dict[WindowName, WindowValue] = Field(
        description="The member's live windows since it started (docs/monitoring.md)"
    )


class MemberLive(BaseModel):
    member: str
    reachable: bool
    error: str | None = None
    sample_time: datetime | None = Field(default=None, description="When the sample was taken")
    indicators: list[LiveIndicator] = Field(default_factory=list)


class ClusterIndicator(BaseModel):
    name: IndicatorName
    current: float = Field(description="Sum of the current values of the reachable members")


class ClusterLive(BaseModel):
    members_reachable: int = Field(ge=0)
    members_unreachable: int = Field(ge=0)
    indicators: list[ClusterIndicator] = Field(
        description="Current values summed over the reachable members. Cluster windows are not "
        "summed live: they come from the pipeline (/api/v1/stats/windows?scope=cluster)"
    )


class LiveStats(BaseModel):
    at: datetime
    cluster: ClusterLive
    members: list[MemberLive]


# --- pipeline statistics -----------------------------------------------------------------------


class WindowStatOut(BaseModel):
    """One window statistic computed by the pipeline, with its as-of time."""

    scope: str = Field(description="'cluster' or 'node:<ServerName>'")
    indicator: str
    window: str
    as_of: datetime = Field(description="The instant the statistics describe")
    count: int = Field(ge=0, description="Seconds of the window that hold a sample")
    coverage: float = Field(
        ge=0.0,
        le=1.0,
        description="count / the seconds the window spans at as_of (docs/monitoring.md, "
        "Coverage): the share of the window the statistics describe",
    )
    low_coverage: bool = Field(
        description="coverage below 0.9: max/avg/stddev describe only the seconds present"
    )
    max: float | None
    avg: float | None
    stddev: float | None
    run_id: int | None = Field(description="The job run that wrote it")
    computed_at: datetime = Field(description="When the pipeline wrote it")
    age_seconds: float = Field(description="Seconds since computed_at")
    stale: bool = Field(description="age_seconds > Admin.StaleAfter")


class WindowStatList(BaseModel):
    items: list[WindowStatOut]
    stale_after_seconds: float


class WatchedWindowStatList(WindowStatList):
    """The stored windows of one watched pattern (the statistics pipeline, ADR 030): scope
    ``cluster`` (summed over members) or ``node:<ServerName>``, the six pattern indicators."""

    pattern: str


# --- subjects ----------------------------------------------------------------------------------


class PublishIn(BaseModel):
    """A test message, sent to the member's client port (``POST /publish``)."""

    model_config = ConfigDict(extra="forbid")

    subject: Subject
    content: Annotated[str, StringConstraints(max_length=1_048_576)]
    fields: dict[Annotated[str, StringConstraints(max_length=1024)], str] = Field(
        default_factory=dict, max_length=1000
    )
    retained: bool = True
    qos: Literal["guaranteed", "standard"] = "guaranteed"
    entitlement_token: Annotated[str, StringConstraints(max_length=8192)] | None = Field(
        default=None,
        description="An entitlement token (JWT) for members with Entitlement = jwt; not stored",
    )


# --- sessions ----------------------------------------------------------------------------------

SESSION_SORT_KEYS = (
    "connected_since",
    "bytes_in",
    "bytes_out",
    "remote",
    "messages_in",
    "messages_out",
    "outbound_buffer_bytes",
    "client_id",
    "member",
    "subject_count",
)
SessionSort = Literal[
    "connected_since",
    "-connected_since",
    "bytes_in",
    "-bytes_in",
    "bytes_out",
    "-bytes_out",
    "remote",
    "-remote",
    "messages_in",
    "-messages_in",
    "messages_out",
    "-messages_out",
    "outbound_buffer_bytes",
    "-outbound_buffer_bytes",
    "client_id",
    "-client_id",
    "member",
    "-member",
    "subject_count",
    "-subject_count",
]


# --- jobs --------------------------------------------------------------------------------------


class JobRunPage(Page):
    items: list[JobRunOut]


class JobTrigger(BaseModel):
    model_config = ConfigDict(extra="forbid")

    as_of: UnixSeconds | None = Field(
        default=None, description="Compute as of this instant (default: the pipeline's)"
    )


# --- audit -------------------------------------------------------------------------------------


class AuditPage(Page):
    items: list[AuditOut]


# --- tokens ------------------------------------------------------------------------------------

TokenName = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")
]


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: TokenName = Field(examples=["grafana"])
    role: Role
    expires_in: int | None = Field(
        default=None,
        ge=60,
        le=10 * 366 * 86400,
        description="Seconds until the token expires (60 s to 10 years); omitted: never",
        examples=[86400],
    )


class TokenOut(BaseModel):
    id: str
    name: str
    role: Role
    prefix: str = Field(description="The token's first characters, to recognise it")
    created_at: datetime
    created_by: str | None
    last_used_at: datetime | None
    revoked: bool
    revoked_at: datetime | None
    expires_at: datetime | None = Field(
        default=None, description="When the token stops working (null: never)"
    )
    expired: bool = False


class TokenCreated(TokenOut):
    token: str = Field(description="The token: shown this once, stored only as a hash")


class TokenList(BaseModel):
    items: list[TokenOut]


class OccupancyOut(BaseModel):
    """A subject's subscribers in the whole cluster, as one member sees them (docs/occupancy.md)."""

    member: str = Field(description="The member asked (every member knows the cluster's counts)")
    subject: str
    subscribers: int = Field(ge=0, description="Subscribers in the whole cluster")
    members: dict[str, int] = Field(description="Subscribers per member that has any")


class OverviewOut(BaseModel):
    """What the console's Overview shows at one refresh, from one round of reads: the members,
    their live indicators and the cluster. A member listed unreachable in ``members`` is down in
    ``cluster`` too (issue 34, 4.4: "Cluster OK, 2/3 up" beside a red card)."""

    at: datetime
    members: MemberList
    live: LiveStats
    cluster: ClusterOut


# --- slow consumers (ADR 050) ------------------------------------------------------------------


class SlowConsumerOut(BaseModel):
    """A session a member closed with 4001 (its outbound buffer passed MaxOutboundBufferSize)."""

    member: str
    at: datetime = Field(description="When it was closed (millisecond precision)")
    session: str
    remote: str
    client_id: str
    transport: SessionTransport
    subjects: list[str] = Field(description="What it followed (the first 50)")
    subject_count: int
    queued_bytes: int = Field(description="Bytes waiting for the client when it was closed")
    limit: int = Field(description="MaxOutboundBufferSize of the member")
    compressed: bool = Field(default=False, description="permessage-deflate was agreed")
    queued_by_subject: dict[str, int] = Field(
        default_factory=dict,
        description="Subjects of the live deliveries still queued at the close (top 10, count)",
    )
    backlog_seconds: float | None = Field(
        default=None,
        description="How long the socket's send buffer had not been empty (null: it was)",
    )
    send_rate: float = Field(
        default=0.0, description="Bytes/s written to it, averaged over its session"
    )
    connected_seconds: float = Field(default=0.0, description="How long it was connected")
    rtt_ms: float | None = Field(
        default=None, description="The round trip its client last reported (null: never)"
    )
    offenses: int = Field(
        default=1,
        description="Its closes in the member's log so far (same client id, else address)",
    )


class SlowConsumerPage(Page):
    items: list[SlowConsumerOut] = Field(description="Newest first")
    unreachable: list[MemberError] = Field(default_factory=list)
