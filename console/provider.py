"""What the console needs from the outside world: the :class:`ConsoleProvider` interface.

Pages never talk to servers, the database or the network themselves: every callback asks a
provider (the admin API over HTTP in production, :mod:`console.http_provider`) and gets back
typed values. A failed request raises :class:`ProviderError` with the HTTP status, a short title
and the detail the admin API gave, and the page shows it to the operator.

Most values are the admin API's own answers, one type in :mod:`pushgrid.ops.api` for the route
and the console (ADR 059): they convert to and from plain JSON with ``model_dump(mode="json")`` /
``model_validate``, which is what Dash stores and callbacks exchange. The dataclasses below are
the console's regroupings of answers not moved yet; they convert with ``to_json`` / ``from_json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from typing import Any, Protocol, Self, TypeVar, get_type_hints, runtime_checkable

from pushgrid.ops.api.audit import AuditOut
from pushgrid.ops.api.cluster import ClusterOut
from pushgrid.ops.api.history import CLUSTER as CLUSTER
from pushgrid.ops.api.history import HistoryOut
from pushgrid.ops.api.jobs import JobRunOut
from pushgrid.ops.api.me import Me
from pushgrid.ops.api.sessions import SessionPage
from pushgrid.ops.api.subjects import PresenceOut, PublishOut, SnapshotOut
from pushgrid.ops.api.trends import TrendPointOut
from pushgrid.ops.panel import MemberPanel
from pushgrid.ops.statistics import TrendQuery
from pushgrid.ops.workers import WorkerProcess
from pushgrid.protocol.exceptions import RETRYABLE_HTTP_STATUSES, ClientError

LIVE_WINDOWS: tuple[str, ...] = ("1m", "5m", "15m")

_T = TypeVar("_T")


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


@cache
def _float_fields(cls: type) -> frozenset[str]:
    """The fields of a dataclass typed ``float`` or ``float | None``."""
    hints = get_type_hints(cls)
    return frozenset(f.name for f in fields(cls) if hints[f.name] in (float, float | None))


def floats_restored(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the float fields' whole numbers made floats again.

    A value that went through the browser (a ``dcc.Store``, a callback's State) comes back from
    JavaScript, which has one number type: 2001.0 returns as 2001. Without this a page would
    show ``2001`` in one render and ``2001.0`` in the next.
    """
    values = dict(data)
    for name in _float_fields(cls):
        value = values.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            values[name] = float(value)
    return values


class _Json:
    """``to_json`` / ``from_json`` for flat dataclasses (nested ones override ``from_json``)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload, no-any-return]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        return cls(**floats_restored(cls, data))


@dataclass(frozen=True)
class MemberCard(_Json):
    """One server the admin API manages, with its health as of the last probe."""

    name: str
    url: str
    up: bool
    error: str | None = None
    server_name: str | None = None
    version: str | None = None
    uptime: float | None = None  # seconds
    engine: str | None = None
    connected_users: int | None = None
    subscriptions: int | None = None
    # the admin API's member panel (CPU, RSS, open files, loop lag, ...; console/member_panel.py)
    panel: MemberPanel | None = None
    not_answering: float | None = None  # seconds since a hung member stopped answering
    # the processes that serve it, worker 0 first (console/member_panel.py: one row each)
    processes: tuple[WorkerProcess, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "panel": None if self.panel is None else self.panel.as_dict(),
            "processes": processes_json(self.processes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemberCard:
        panel = data.get("panel")
        return cls(
            **{
                **data,
                "panel": None if panel is None else MemberPanel.model_validate(panel),
                "processes": processes_of(data.get("processes")),
            }
        )


def processes_json(processes: tuple[WorkerProcess, ...] | None) -> list[dict[str, Any]] | None:
    return None if processes is None else [p.as_dict() for p in processes]


def processes_of(rows: Any) -> tuple[WorkerProcess, ...] | None:
    """The admin API's ``processes`` (a list of rows, or null) as the contract's type."""
    return None if rows is None else tuple(WorkerProcess.model_validate(r) for r in rows)


@dataclass(frozen=True)
class MomentsView(_Json):
    """max / average / standard deviation of one indicator over one window."""

    count: int = 0
    max: float | None = None
    avg: float | None = None
    stddev: float | None = None


@dataclass(frozen=True)
class LiveIndicatorView:
    """The current value of one indicator and its live windows (1m, 5m, 15m)."""

    name: str
    current: float | None
    windows: dict[str, MomentsView] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "current": self.current,
            "windows": {w: m.to_json() for w, m in self.windows.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LiveIndicatorView:
        return cls(
            str(data["name"]),
            floats_restored(cls, data).get("current"),
            {w: MomentsView.from_json(m) for w, m in (data.get("windows") or {}).items()},
        )


@dataclass(frozen=True)
class LiveScope:
    """The live indicators of one scope (a member, or the cluster) at sample second ``ts``."""

    scope: str
    ts: int | None
    indicators: dict[str, LiveIndicatorView] = field(default_factory=dict)
    error: str | None = None  # the member could not be read

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "ts": self.ts,
            "error": self.error,
            "indicators": {n: i.to_json() for n, i in self.indicators.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LiveScope:
        return cls(
            str(data["scope"]),
            data.get("ts"),
            {n: LiveIndicatorView.from_json(i) for n, i in (data.get("indicators") or {}).items()},
            data.get("error"),
        )


@dataclass(frozen=True)
class LiveOverview:
    """Everything the Overview shows at one tick: member health and live indicators."""

    members: list[MemberCard]
    cluster: LiveScope
    scopes: dict[str, LiveScope] = field(default_factory=dict)  # by member name
    topology: ClusterOut | None = None  # None: the admin API could not say

    def to_json(self) -> dict[str, Any]:
        return {
            "members": [m.to_json() for m in self.members],
            "cluster": self.cluster.to_json(),
            "scopes": {n: s.to_json() for n, s in self.scopes.items()},
            "topology": None if self.topology is None else self.topology.model_dump(mode="json"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LiveOverview:
        topology = data.get("topology")
        return cls(
            [MemberCard.from_json(m) for m in data["members"]],
            LiveScope.from_json(data["cluster"]),
            {n: LiveScope.from_json(s) for n, s in (data.get("scopes") or {}).items()},
            ClusterOut.model_validate(topology) if topology else None,
        )


@dataclass(frozen=True)
class StatRow(_Json):
    """One (indicator, window) of the pipeline's window statistics."""

    indicator: str
    window: str
    count: int
    max: float | None
    avg: float | None
    stddev: float | None
    coverage: float = 1.0  # share of the window's seconds with a sample (docs/monitoring.md)


@dataclass(frozen=True)
class WindowStatistics:
    """The pipeline's window statistics of one scope, with their freshness."""

    scope: str
    as_of: int | None  # Unix second the statistics describe
    computed_at: str | None  # ISO 8601, when the pipeline wrote them
    stale: bool
    stale_after: float | None  # seconds (Admin.StaleAfter)
    rows: list[StatRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rows"] = [r.to_json() for r in self.rows]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WindowStatistics:
        values = floats_restored(cls, data)
        values["rows"] = [StatRow.from_json(r) for r in values.get("rows") or []]
        return cls(**values)


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
