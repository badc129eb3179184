"""What the console needs from the outside world: the :class:`ConsoleProvider` interface.

Pages never talk to servers, the database or the network themselves: every callback asks a
provider (the admin API over HTTP in production, :mod:`console.http_provider`) and gets back
typed values. A failed request raises :class:`ProviderError` with the HTTP status, a short title
and the detail the admin API gave, and the page shows it to the operator.

Most values are the admin API's own answers, one type in :mod:`pushgrid.ops.api` for the route
and the console (ADR 059): they convert to and from plain JSON with ``model_dump(mode="json")`` /
``model_validate``, which is what Dash stores and callbacks exchange. The dataclasses below are
the console's regroupings of several answers (no field of their own that an answer lacks); they
hold the shared types and convert with ``to_json`` / ``from_json`` over ``model_dump``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from pushgrid.ops.api.audit import AuditOut
from pushgrid.ops.api.cluster import ClusterOut
from pushgrid.ops.api.history import CLUSTER as CLUSTER
from pushgrid.ops.api.history import HistoryOut
from pushgrid.ops.api.jobs import JobRunOut
from pushgrid.ops.api.live import LiveIndicator, WindowName
from pushgrid.ops.api.me import Me
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.api.sessions import SessionPage
from pushgrid.ops.api.statistics import WindowStatOut
from pushgrid.ops.api.subjects import PresenceOut, PublishOut, SnapshotOut
from pushgrid.ops.api.trends import TrendPointOut
from pushgrid.ops.statistics import TrendQuery
from pushgrid.protocol.exceptions import RETRYABLE_HTTP_STATUSES, ClientError

LIVE_WINDOWS: tuple[WindowName, ...] = ("1m", "5m", "15m")


class ProviderError(ClientError):
    """A request the provider could not fulfil (an HTTP error, a member down, a bad token...).

    ``status`` is the HTTP status (0 when the admin API could not be reached at all).
    """

    code = "provider"

    def __init__(self, status: int, title: str, detail: str = "") -> None:
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")
        self.status = status
        self.retryable = status in RETRYABLE_HTTP_STATUSES
        self.title = title
        self.detail = detail

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "title": self.title, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProviderError:
        return cls(
            int(data.get("status", 0)), str(data.get("title", "")), str(data.get("detail", ""))
        )

    @property
    def unauthorized(self) -> bool:
        return self.status == 401


@dataclass(frozen=True)
class LiveScope:
    """The live indicators of one scope (a member, or the cluster) at sample second ``ts``: a
    member's ``MemberLive`` keyed by indicator name, or the cluster's sums (current values only,
    no windows)."""

    scope: str
    ts: int | None
    indicators: dict[str, LiveIndicator] = field(default_factory=dict)
    error: str | None = None  # the member could not be read

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "ts": self.ts,
            "error": self.error,
            "indicators": {n: i.model_dump(mode="json") for n, i in self.indicators.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LiveScope:
        indicators = data.get("indicators") or {}
        return cls(
            str(data["scope"]),
            data.get("ts"),
            {n: LiveIndicator.model_validate(i) for n, i in indicators.items()},
            data.get("error"),
        )


@dataclass(frozen=True)
class LiveOverview:
    """Everything the Overview shows at one tick (``OverviewOut`` regrouped): member health and
    live indicators by scope."""

    members: list[MemberOut]
    cluster: LiveScope
    scopes: dict[str, LiveScope] = field(default_factory=dict)  # by member name
    topology: ClusterOut | None = None  # None: the admin API could not say

    def to_json(self) -> dict[str, Any]:
        return {
            "members": [m.model_dump(mode="json") for m in self.members],
            "cluster": self.cluster.to_json(),
            "scopes": {n: s.to_json() for n, s in self.scopes.items()},
            "topology": None if self.topology is None else self.topology.model_dump(mode="json"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LiveOverview:
        topology = data.get("topology")
        return cls(
            [MemberOut.model_validate(m) for m in data["members"]],
            LiveScope.from_json(data["cluster"]),
            {n: LiveScope.from_json(s) for n, s in (data.get("scopes") or {}).items()},
            ClusterOut.model_validate(topology) if topology else None,
        )


@dataclass(frozen=True)
class WindowStatistics:
    """The pipeline's window statistics of one scope (``GET /stats/windows`` grouped by scope),
    with their freshness."""

    scope: str
    as_of: int | None  # Unix second the statistics describe
    computed_at: str | None  # ISO 8601, when the pipeline wrote them
    stale: bool
    stale_after: float | None  # seconds (Admin.StaleAfter)
    rows: list[WindowStatOut] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rows"] = [r.model_dump(mode="json") for r in self.rows]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WindowStatistics:
        stale_after = data.get("stale_after")
        return cls(
            str(data["scope"]),
            data.get("as_of"),
            data.get("computed_at"),
            bool(data.get("stale")),
            None if stale_after is None else float(stale_after),  # a whole number comes back int
            [WindowStatOut.model_validate(r) for r in data.get("rows") or []],
        )


@dataclass(frozen=True)
class SubjectView:
    """A subject's snapshot (``None``: nothing retained yet) and subscribers per member: the
    members' ``SubjectInfo`` answers merged (the first snapshot found)."""

    subject: str
    snapshot: SnapshotOut | None
    subscribers: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # members that could not answer

    @property
    def subscriber_count(self) -> int:
        return sum(self.subscribers.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "snapshot": None if self.snapshot is None else self.snapshot.model_dump(mode="json"),
            "subscribers": dict(self.subscribers),
            "errors": dict(self.errors),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SubjectView:
        snapshot = data.get("snapshot")
        return cls(
            str(data["subject"]),
            None if snapshot is None else SnapshotOut.model_validate(snapshot),
            dict(data.get("subscribers") or {}),
            dict(data.get("errors") or {}),
        )


@dataclass(frozen=True)
class AuditFilter:
    """The audit API's filters (``GET /api/v1/audit``); ``None`` leaves one out."""

    actor: str | None = None
    action: str | None = None
    outcome: str | None = None  # succeeded | denied | failed
    since: str | None = None  # ISO 8601 with zone
    until: str | None = None  # ISO 8601 with zone: before it

    def params(self) -> dict[str, str]:
        given = {"actor": self.actor, "action": self.action}
        given |= {"outcome": self.outcome, "since": self.since, "until": self.until}
        return {key: value for key, value in given.items() if value}


@runtime_checkable
class ConsoleProvider(Protocol):
    """Everything the pages ask for. Every method raises :class:`ProviderError` on failure."""

    def whoami(self) -> Me: ...

    def live(self) -> LiveOverview:
        """Members with their health and the live indicators of each member and the cluster."""
        ...

    def history(self, since: int | None = None, until: int | None = None) -> HistoryOut:
        """Every member's per-second samples the admin API keeps, and their cluster sums."""
        ...

    def scopes(self) -> list[str]:
        """The scopes the pipeline wrote statistics for (cluster first)."""
        ...

    def member_names(self) -> list[str]:
        """The members the admin API manages now (a scope of another node is history)."""
        ...

    def all_window_stats(self) -> list[WindowStatistics]:
        """The window statistics of every scope the pipeline wrote (cluster first)."""
        ...

    def trend(self, query: TrendQuery) -> list[TrendPointOut]: ...

    def subject(self, subject: str, entitlement_token: str | None = None) -> SubjectView:
        """``entitlement_token``: the operator's, for members with entitlement (issue 22)."""
        ...

    def presence(self, subject: str, entitlement_token: str | None = None) -> PresenceOut:
        """The subject's presence from the first member that answers (every member knows the
        cluster's); ProviderError when none does (403 without the operator role)."""
        ...

    def publish(self, subject: str, content: str, fields: Mapping[str, str]) -> PublishOut: ...

    def sessions(
        self,
        search: str = "",
        member: str | None = None,
        offset: int = 0,
        limit: int = 20,
        filters: Mapping[str, str] | None = None,
    ) -> SessionPage:
        """``filters``: more of the admin API's ``/sessions`` parameters (transport, internal,
        sort), passed as they are."""
        ...

    def disconnect(self, member: str, session_id: str) -> bool: ...

    def jobs(self, limit: int = 20) -> list[JobRunOut]: ...

    def start_job(self) -> JobRunOut: ...

    def audit(
        self, limit: int = 50, filters: AuditFilter | None = None, offset: int = 0
    ) -> list[AuditOut]: ...
