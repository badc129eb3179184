"""A made-up provider for working on the pages without a cluster (``python -m console --demo``).

Development only: tests use the real admin API (:mod:`console.http_provider`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.window_spec import LOW_COVERAGE, WINDOW_NAMES, coverage
from pushgrid.ops.api.audit import AuditOut
from pushgrid.ops.api.cluster import ClusterMemberOut, ClusterOut
from pushgrid.ops.api.delivery_windows import DeliveryWindowList, DeliveryWindowOut
from pushgrid.ops.api.history import HistoryOut, HistorySeriesOut
from pushgrid.ops.api.jobs import JobRunOut, StageOut
from pushgrid.ops.api.live import LiveIndicator, WindowValue
from pushgrid.ops.api.me import Me, Role
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.api.sessions import SessionOut, SessionPage
from pushgrid.ops.api.statistics import WindowStatOut
from pushgrid.ops.api.subjects import PresenceOut, PresentClientOut, PublishOut, SnapshotOut
from pushgrid.ops.api.trends import TrendPointOut
from pushgrid.ops.delivery import bucket_text, percentiles, text_counts
from pushgrid.ops.statistics import TrendQuery

from .provider import (
    CLUSTER,
    LIVE_WINDOWS,
    AuditFilter,
    LiveOverview,
    LiveScope,
    ProviderError,
    SubjectView,
    WindowStatistics,
)

_BASE = {
    "connected_users": 1200.0,
    "connections_per_second": 12.0,
    "disconnections_per_second": 11.0,
    "incoming_messages_per_second": 900.0,
    "outgoing_messages_per_second": 42000.0,
    "incoming_bytes_per_second": 180_000.0,
    "outgoing_bytes_per_second": 9_500_000.0,
}


def _iso(unix: float) -> str:
    return _moment(unix).isoformat()


def _trend_point(ts: int, base: float) -> TrendPointOut:
    return TrendPointOut(
        as_of=_moment(ts),
        count=3600,
        coverage=1.0,
        max=base * 1.7,
        avg=base,
        stddev=base * 0.15,
        run_id=None,
    )


def _demo_histogram(median_us: float, tail: float, n: int) -> list[int]:
    """Bucket counts of ``n`` made-up latencies around ``median_us`` (bucket i ends at
    10^(1 + i/10) µs: docs/protocol.md 5.7)."""
    rng = random.Random(int(median_us * tail))  # nosec B311 (made-up demo data)
    counts = text_counts("")  # every bucket, empty
    for _ in range(n):
        micros = median_us * math.exp(rng.gauss(0.0, 0.6 * tail))
        index = max(0, math.ceil(10 * (math.log10(max(micros, 1.0)) - 1)))
        counts[min(index, len(counts) - 1)] += 1
    return counts


def _demo_loss(series: str, window: int) -> dict[str, int]:
    """A few gaps and recoveries in the clients' series, more in the longer windows."""
    seen = window if series == "member" else 0
    return {
        "gaps": seen,
        "duplicates": 0,
        "resyncs": seen // 4,
        "recovered": seen,
        "recovery_failed": 0,
    }


def _moment(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


class DemoProvider:
    """Two members, wavy indicators, a few sessions, runs and audit entries."""

    def __init__(self, token: str = "demo") -> None:  # nosec B107
        self.token = token
        self.members = ["push-1", "push-2"]
        self.snapshots: dict[str, SnapshotOut] = {}
        self.gone: set[str] = set()

    def _value(self, indicator: str, member: int, ts: float) -> float:
        wave = 1 + 0.25 * math.sin(ts / 20 + member) + 0.05 * random.random()
        value = _BASE[indicator] * wave / len(self.members)
        return round(value) if indicator != "connected_users" else float(int(value))

    def whoami(self) -> Me:
        if self.token == "bad":  # nosec B105
            raise ProviderError(401, "Unauthorized", "unknown or revoked token")
        return Me(token_id="demo", name="demo", role=Role.ADMIN)  # nosec B106 (a demo id)

    def live(self) -> LiveOverview:
        now = int(time.time())
        members = [
            MemberOut(
                name=name,
                source="config",
                monitor_url=f"http://127.0.0.1:{8900 + i}",
                client_url=f"http://127.0.0.1:{8800 + i}",
                has_credentials=False,
                reachable=True,
                server_name=name,
                version="0.1.0",
                uptime_seconds=3600.0 * (i + 1),
                engine="memory",
                connected_users=600 + i,
                subscriptions=1400,
            )
            for i, name in enumerate(self.members)
        ]
        scopes: dict[str, LiveScope] = {}
        totals = dict.fromkeys(INDICATOR_NAMES, 0.0)
        for i, name in enumerate(self.members):
            indicators = {}
            for indicator in INDICATOR_NAMES:
                value = self._value(indicator, i, now)
                totals[indicator] += value
                windows = {  # a made-up spread around the current value
                    w: WindowValue(
                        count=60 * (k + 1), max=value * 1.4, avg=value, stddev=value * 0.1
                    )
                    for k, w in enumerate(LIVE_WINDOWS)
                }
                indicators[indicator] = LiveIndicator.model_validate(
                    {"name": indicator, "current": value, "windows": windows}
                )
            scopes[name] = LiveScope(name, now, indicators)
        cluster = LiveScope(
            CLUSTER,
            now,
            {
                n: LiveIndicator.model_validate({"name": n, "current": v, "windows": {}})
                for n, v in totals.items()
            },
        )
        topology = ClusterOut(
            mode="guaranteed",
            health="ok",
            quorum=True,
            stream_leader="pushgrid-m1",
            members=[
                ClusterMemberOut(name=name, state="up", seed=i < 3, leader=i == 0)
                for i, name in enumerate(self.members)
            ],
        )
        return LiveOverview(members, cluster, scopes, topology)

    def history(self, since: int | None = None, until: int | None = None) -> HistoryOut:
        """The same waves as :meth:`live`, one sample a second over the last hour."""
        end = int(time.time()) if until is None else until
        start = max(end - 3599, end - 899 if since is None else since)
        seconds = list(range(start, end + 1))
        members = [
            HistorySeriesOut(
                scope=name,
                seconds=seconds,
                values={n: [self._value(n, i, ts) for ts in seconds] for n in INDICATOR_NAMES},
            )
            for i, name in enumerate(self.members)
        ]
        totals: dict[str, list[float | None]] = {
            n: [sum(m.values[n][k] or 0.0 for m in members) for k in range(len(seconds))]
            for n in INDICATOR_NAMES
        }
        return HistoryOut.model_validate(
            {
                "since": start,
                "until": end,
                "retention": 3600,
                "indicators": INDICATOR_NAMES,
                "cluster": {"scope": CLUSTER, "seconds": seconds, "values": totals},
                "members": members,
            }
        )

    def scopes(self) -> list[str]:
        return [CLUSTER, *(f"node:{m}" for m in self.members)]

    def member_names(self) -> list[str]:
        return list(self.members)

    def window_stats(self, scope: str) -> WindowStatistics:
        as_of = int(time.time()) // 300 * 300
        rows = [
            WindowStatOut(
                scope=scope,
                indicator=ind,
                window=w,
                as_of=_moment(as_of),
                count=60 * (j + 1),
                coverage=coverage(w, 60 * (j + 1), as_of),
                low_coverage=coverage(w, 60 * (j + 1), as_of) < LOW_COVERAGE,
                max=_BASE[ind] * 1.8 * (1 + j / 20),
                avg=_BASE[ind] * (1 + j / 40),
                stddev=_BASE[ind] * 0.12,
                run_id=None,
                computed_at=_moment(as_of + 40),
                age_seconds=time.time() - as_of - 40,
                stale=False,
            )
            for ind in INDICATOR_NAMES
            for j, w in enumerate(WINDOW_NAMES)
        ]
        return WindowStatistics(scope, as_of, _iso(as_of + 40), False, 900.0, rows)

    def all_window_stats(self) -> list[WindowStatistics]:
        return [self.window_stats(scope) for scope in self.scopes()]

    def trend(self, query: TrendQuery) -> list[TrendPointOut]:
        indicator, since = query.indicator, query.since
        now = int(time.time()) // 3600 * 3600
        points = []
        for k in range(7 * 24):
            ts = now - k * 3600
            if since is not None and ts < since:
                continue
            base = _BASE[indicator] * (1 + 0.3 * math.sin(ts / 40000))
            points.append(_trend_point(ts, base))
        return sorted(points, key=lambda p: p.as_of)

    def delivery_windows(self) -> DeliveryWindowList:
        """The Statistics page's delivery latency windows: log-normal-ish latencies around a
        median per series, more of them and a longer tail in the longer windows."""
        now = int(time.time())
        as_of = _moment(now - now % 300)
        scopes = [(CLUSTER, len(self.members)), *((f"node:{m}", 1) for m in self.members)]
        series = (("member", 12_000.0), ("leg:fanout", 400.0), ("leg:publish_ack", 3_000.0))
        items = []
        for scope, share in scopes:
            for name, median_us in series:
                for k, window in enumerate(WINDOW_NAMES):
                    counts = _demo_histogram(median_us, tail=1.0 + 0.15 * k, n=share * 40 * (k + 1))
                    items.append(
                        DeliveryWindowOut(
                            scope=scope,
                            series=name,
                            window=window,
                            as_of=as_of,
                            count=sum(counts),
                            **percentiles(counts),
                            buckets=bucket_text(counts),
                            loss=_demo_loss(name, k),
                            run_id=42,
                            computed_at=as_of,
                            age_seconds=float(now % 300),
                            stale=False,
                        )
                    )
        return DeliveryWindowList(items=items, stale_after_seconds=900.0)

    def subject(self, subject: str, entitlement_token: str | None = None) -> SubjectView:
        # the demo's members have no entitlement: the token is not needed
        return SubjectView(subject, self.snapshots.get(subject), {m: 3 for m in self.members})

    def presence(self, subject: str, entitlement_token: str | None = None) -> PresenceOut:
        # the demo keeps presence for /Chat/... subjects: three sessions per member
        asked = self.members[0]
        if not subject.startswith("/Chat/"):
            return PresenceOut(
                member=asked,
                subject=subject,
                enabled=False,
                subscribers=3 * len(self.members),
                clients=[],
                truncated=False,
            )
        clients = [
            PresentClientOut(session=f"{i:04x}{m}", client_id=f"user{i}@{m}", member=m)
            for m in self.members
            for i in range(3)
        ]
        return PresenceOut(
            member=asked,
            subject=subject,
            enabled=True,
            subscribers=len(clients),
            clients=clients,
            truncated=False,
        )

    def publish(self, subject: str, content: str, fields: Mapping[str, str]) -> PublishOut:
        old = self.snapshots.get(subject)
        seq = 1 if old is None else old.seq + 1
        merged = {**(old.fields if old else {}), **fields}
        self.snapshots[subject] = SnapshotOut(
            subject=subject,
            content=content,
            fields=merged,
            epoch="a1b2c3",
            seq=seq,
            ts=int(time.time() * 1000),
        )
        return PublishOut(
            member=self.members[0], subject=subject, result="ok", epoch="a1b2c3", seq=seq
        )

    def sessions(
        self,
        search: str = "",
        member: str | None = None,
        offset: int = 0,
        limit: int = 20,
        filters: Mapping[str, str] | None = None,
    ) -> SessionPage:
        now = time.time()
        items = [
            SessionOut(
                member=self.members[i % 2],
                id=f"s{i:04d}",
                remote=f"10.1.{i % 7}.{i}:5{i:04d}",
                connected_since=_moment(now - 37 * i),
                subjects=[f"/Stocks/NYSE/{t}" for t in ("IBM", "MSFT", "AAPL", "KO")[: 1 + i % 4]],
                messages_in=i * 3,
                bytes_in=i * 120,
                bytes_out=i * 5400,
            )
            for i in range(1, 48)
            if f"s{i:04d}" not in self.gone
        ]
        items = [
            s
            for s in items
            if (member is None or s.member == member)
            and (
                not search
                or search in s.id
                or search in s.remote
                or any(search in x for x in s.subjects)
            )
        ]
        return SessionPage(
            items=items[offset : offset + limit], total=len(items), offset=offset, limit=limit
        )

    def disconnect(self, member: str, session_id: str) -> bool:
        self.gone.add(session_id)
        return True

    def jobs(self, limit: int = 20) -> list[JobRunOut]:
        now = time.time()
        return [_demo_run(40 - k, now - 300 * (k + 1), 20 + 6 * math.sin(k)) for k in range(12)][
            :limit
        ]

    def start_job(self) -> JobRunOut:
        return JobRunOut(
            id=41,
            status="running",
            started_at=_moment(time.time()),
            finished_at=None,
            duration_seconds=None,
            as_of=None,
            master=None,
            input_rows=None,
            output_rows=None,
            error=None,
            stages=[],
        )

    def audit(
        self, limit: int = 50, filters: AuditFilter | None = None, offset: int = 0
    ) -> list[AuditOut]:
        wanted = filters or AuditFilter()
        return [e for e in self._audit() if _matches(e, wanted)][offset : offset + limit]

    def _audit(self) -> list[AuditOut]:
        now = time.time()
        actions: list[tuple[str, str | None, Literal["succeeded", "denied"], int]] = [
            ("sessions.disconnect", "push-1/s0003", "succeeded", 200),
            ("jobs.start", None, "succeeded", 202),
            ("subjects.publish", "/Stocks/NYSE/IBM", "succeeded", 200),
            ("members.register", "push-3", "denied", 403),
        ]
        return [
            AuditOut(
                id=100 - k,
                at=_moment(now - 90 * k),
                actor="alice" if k % 3 else "bob",
                token_id=None,
                role=Role.OPERATOR,
                method="POST",
                path="/api/v1/...",
                action=actions[k % 4][0],
                target=actions[k % 4][1],
                status=actions[k % 4][3],
                outcome=actions[k % 4][2],
                detail=None,
            )
            for k in range(20)
        ]


def _demo_run(run_id: int, started: float, took: float) -> JobRunOut:
    status: Literal["failed", "succeeded"] = "failed" if run_id == 36 else "succeeded"
    return JobRunOut(
        id=run_id,
        status=status,
        started_at=_moment(started),
        finished_at=_moment(started + took),
        duration_seconds=took,
        as_of=_moment(int(started) // 300 * 300),
        master=None,
        input_rows=172_800,
        output_rows=2016,
        error="Py4JJavaError: out of memory" if status == "failed" else None,
        stages=[
            StageOut(name="compaction", seconds=0.3 * took, input_rows=10_800, output_rows=10_800),
            StageOut(name="rollups", seconds=0.3 * took, input_rows=10_800, output_rows=1_736),
            StageOut(name="windows", seconds=0.4 * took, input_rows=130_410, output_rows=56_784),
        ],
    )


def _matches(entry: AuditOut, wanted: AuditFilter) -> bool:
    """The API's filters, on the made-up entries (the same rules as ``GET /api/v1/audit``)."""
    return (
        (wanted.actor is None or entry.actor == wanted.actor)
        and (wanted.action is None or entry.action == wanted.action)
        and (wanted.outcome is None or entry.outcome == wanted.outcome)
        and (wanted.since is None or entry.at >= datetime.fromisoformat(wanted.since))
        and (wanted.until is None or entry.at < datetime.fromisoformat(wanted.until))
    )
