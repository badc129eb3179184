"""Alert rules in SQL (``alert_rules``), their history (``alert_events``), and the runner that
evaluates them every ``Alerts.Interval`` seconds and announces changes (docs/alerts.md).

Announcements of ``firing`` and ``resolved`` (not ``pending``): a retained message on the
meta-subject ``/pushgrid/alerts`` (the member's ``Subjects.publishAlert`` operation over its
authenticated monitoring port: clients may not publish under ``/pushgrid/``; once per cluster,
once per standalone member), and a JSON POST to ``Alerts.Webhook``
retried ``Alerts.WebhookRetries`` times with exponential backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import httpx
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pushgrid.config import AlertsSettings
from pushgrid.kernel.redaction import redact_url_path
from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import AlertEvent, AlertRule
from pushgrid.ops import names
from pushgrid.ops.cluster import ClusterDocument

from ..access import member_access
from ..alert_signals import key, merge
from ..alerting import Alert, AlertChange, Evaluator, Readings, Rule, State
from ..answering import Answering
from ..background import repeat
from ..member_client import SUBJECTS_MBEAN, MemberEndpoint, MemberFailure, new_http_client
from ..pipeline_metrics import last_run_failed
from ..problems import conflict, not_found
from ..schemas import MemberLive
from ..schemas_ops import AckOut, AlertOut, RuleIn, RuleOut, RulePatch
from .alert_signals import SignalReader
from .alert_silences import AckService, Mute, SilenceService, silenced_until
from .cluster import cluster_views
from .live import live_stats
from .slos import SloService

#: the signals of the objectives' burn rates (read from SQL, not from the members)
SLO_SIGNALS: Final = frozenset({"slo_fast_burn", "slo_slow_burn"})

log = logging.getLogger(__name__)

ALERTS_SUBJECT: Final = "/pushgrid/alerts"


# --- rules and history in SQL ------------------------------------------------------------------


def rule_out(row: AlertRule) -> RuleOut:
    return RuleOut.model_validate(
        {
            "id": row.id,
            "name": row.name,
            "indicator": row.indicator,
            "window": row.window,
            "stat": row.stat,
            "comparison": row.comparison,
            "threshold": row.threshold,
            "for": row.for_seconds,
            "severity": row.severity,
            "scope": row.scope,
            "description": row.description,
            "enabled": row.enabled,
            "clear_threshold": row.clear_threshold,
            "clear_for": row.clear_for,
            "builtin": row.builtin,
            "created_at": row.created_at,
            "created_by": row.created_by,
        }
    )


def as_rule(row: AlertRule | RuleOut) -> Rule:
    for_seconds = row.for_seconds if isinstance(row, AlertRule) else row.for_
    return Rule(
        id=row.id,
        name=row.name,
        indicator=row.indicator,
        window=row.window,
        stat=row.stat,
        comparison=row.comparison,
        threshold=row.threshold,
        for_seconds=for_seconds,
        severity=row.severity,
        scope=row.scope,
        description=row.description,
        clear_threshold=row.clear_threshold,
        clear_for=row.clear_for,
    )


class RuleService:
    def __init__(self, db: Session) -> None:
        self.db = db

    def all(self) -> list[RuleOut]:
        rows = self.db.scalars(select(AlertRule).order_by(AlertRule.name))
        return [rule_out(row) for row in rows]

    def enabled(self) -> list[Rule]:
        rows = self.db.scalars(select(AlertRule).where(AlertRule.enabled.is_(True)))
        return [as_rule(row) for row in rows]

    def _row(self, rule_id: int) -> AlertRule:
        row = self.db.get(AlertRule, rule_id)
        if row is None:
            raise not_found(f"no alert rule {rule_id}")
        return row

    def get(self, rule_id: int) -> RuleOut:
        return rule_out(self._row(rule_id))

    def _apply(self, row: AlertRule, data: RuleIn) -> None:
        row.name, row.indicator, row.window = data.name, data.indicator, data.window
        row.stat, row.comparison, row.threshold = data.stat, data.comparison, data.threshold
        row.for_seconds, row.severity, row.scope = data.for_, data.severity, data.scope
        row.description, row.enabled = data.description, data.enabled
        row.clear_threshold, row.clear_for = data.clear_threshold, data.clear_for

    def _save(self, row: AlertRule, data: RuleIn) -> None:
        try:
            with transaction(self.db):
                self._apply(row, data)
                self.db.add(row)
        except IntegrityError:
            raise conflict(f"an alert rule named {data.name!r} exists already") from None

    def create(self, data: RuleIn, created_by: str | None) -> RuleOut:
        row = AlertRule(created_by=created_by)
        self._save(row, data)
        return rule_out(row)

    def update(self, rule_id: int, data: RuleIn) -> RuleOut:
        row = self._row(rule_id)
        self._save(row, data)
        return rule_out(row)

    def patch(self, rule_id: int, changes: RulePatch) -> RuleOut:
        """Change some fields; the rule as a whole is checked again (422 when incoherent)."""
        row = self._row(rule_id)
        merged = {
            **rule_out(row).model_dump(
                by_alias=True, exclude={"id", "builtin", "created_at", "created_by"}
            ),
            **changes.model_dump(by_alias=True, exclude_unset=True),
        }
        try:
            data = RuleIn.model_validate(merged)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None
        self._save(row, data)
        return rule_out(row)

    def delete(self, rule_id: int) -> None:
        self._row(rule_id)
        with transaction(self.db):
            self.db.execute(delete(AlertRule).where(AlertRule.id == rule_id))

    def record(self, changes: Sequence[AlertChange]) -> None:
        with transaction(self.db):
            for change in changes:
                alert = change.alert
                self.db.add(
                    AlertEvent(
                        at=datetime.fromtimestamp(change.at, UTC),
                        rule_id=alert.rule.id,
                        rule=alert.rule.name,
                        target=alert.target,
                        state=change.state,
                        value=alert.value,
                        summary=alert.summary()[:1024],
                    )
                )

    def open_events(self) -> list[AlertEvent]:
        """The latest event of every alert whose latest state is pending or firing."""
        latest = select(func.max(AlertEvent.id)).group_by(AlertEvent.rule_id, AlertEvent.target)
        rows = self.db.scalars(select(AlertEvent).where(AlertEvent.id.in_(latest)))
        return [row for row in rows if row.state != "resolved"]


# --- evaluation --------------------------------------------------------------------------------


def readings_of(members: Sequence[MemberLive]) -> Readings:
    """Live statistics -> the numbers rules read, per reachable member."""
    out: dict[str, dict[tuple[str, str, str], float | None]] = {}
    for member in members:
        if not member.reachable:
            out[member.member] = {}  # its alerts keep their state: missing data
            continue
        values: dict[tuple[str, str, str], float | None] = {}
        for indicator in member.indicators:
            values[(indicator.name, "current", "current")] = indicator.current
            for window, stats in indicator.windows.items():
                values[(indicator.name, window, "max")] = stats.max
                values[(indicator.name, window, "avg")] = stats.avg
                values[(indicator.name, window, "stddev")] = stats.stddev
        out[member.member] = values
    return out


def alert_out(
    alert: Alert, silenced_until: datetime | None = None, ack: AckOut | None = None
) -> AlertOut:
    return AlertOut(
        rule_id=alert.rule.id,
        rule=alert.rule.name,
        target=alert.target,
        state=alert.state,
        severity=alert.rule.severity,  # type: ignore[arg-type]
        value=alert.value,
        threshold=alert.rule.threshold,
        since=datetime.fromtimestamp(alert.since, UTC),
        summary=alert.summary(),
        silenced_until=silenced_until,
        acknowledged_by=None if ack is None else ack.by,
        acknowledged_at=None if ack is None else ack.at,
    )


def active_alerts(alerts: Sequence[Alert], db: Session) -> list[AlertOut]:
    """The runner's pending and firing alerts with their silences and acknowledgements."""
    now = datetime.now(UTC)
    mutes = SilenceService(db).mutes(now)
    acks = AckService(db).all()
    return [
        alert_out(
            a,
            silenced_until(mutes, a.rule.id, a.target, now),
            acks.get((a.rule.id, a.target)),
        )
        for a in alerts
    ]


def announcement(change: AlertChange) -> dict[str, Any]:
    """The webhook body and the fields of the ``/pushgrid/alerts`` message."""
    alert = change.alert
    return {
        "rule": alert.rule.name,
        "target": alert.target,
        "state": change.state,
        "severity": alert.rule.severity,
        "value": alert.value,
        "threshold": alert.rule.threshold,
        "expression": alert.rule.describe(),
        "at": datetime.fromtimestamp(change.at, UTC).isoformat(),
        "summary": alert.summary(),
    }


@dataclass(frozen=True, slots=True)
class _Loaded:
    """What one evaluation reads from SQL."""

    rules: list[Rule]
    members: list[MemberEndpoint]
    mutes: list[Mute]
    cluster: Mapping[tuple[str, str, str], float | None]
    slo: Readings  # the objectives' burn rates, target slo:<name> (ADR 055)


class AlertRunner:
    """Evaluates the enabled rules every ``Alerts.Interval`` seconds (while there are any; the
    built-in rules are enabled unless an operator disabled them)."""

    def __init__(
        self,
        settings: AlertsSettings,
        session_factory: Callable[[], Session],
        members_of: Callable[[Session], list[MemberEndpoint]],
        answering: Answering | None = None,
    ) -> None:
        """``members_of``: the members the rules are evaluated on, read in a store session;
        ``answering``: the app's memory of silent members (never asked, never announced on)."""
        self.answering = answering
        self.settings = settings
        self.session_factory = session_factory
        self.members_of = members_of
        self.evaluator = Evaluator()
        self.signals = SignalReader()
        self.evaluations = 0
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._sends) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def restore(self) -> list[AlertChange]:
        """Take back the alerts that were pending or firing when the admin API stopped (their
        latest event in SQL), so that a restart neither forgets nor re-announces them. Alerts of
        rules deleted or disabled meanwhile are resolved (and recorded) at once."""
        with self.session_factory() as db:
            service = RuleService(db)
            rules = {rule.id: rule for rule in service.enabled()}
            gone: list[AlertChange] = []
            for event in service.open_events():
                since = event.at.timestamp()
                rule = rules.get(event.rule_id)
                if rule is None:
                    orphan = Rule(
                        event.rule_id,
                        event.rule,
                        "",
                        "current",
                        "max",
                        ">",
                        0.0,
                        0.0,
                        "warning",
                        "member",
                    )
                    alert = Alert(orphan, event.target, "resolved", time.time(), since, event.value)
                    gone.append(AlertChange(alert, "resolved", time.time()))
                    continue
                state: State = "firing" if event.state == "firing" else "pending"
                self.evaluator.alerts[(rule.id, event.target)] = Alert(
                    rule, event.target, state, since, since, event.value
                )
            if gone:
                service.record(gone)
                AckService(db).forget([(c.alert.rule.id, c.alert.target) for c in gone])
        return gone

    async def _run(self) -> None:
        await asyncio.to_thread(self.restore)
        async with new_http_client(answering=self.answering) as http:
            await repeat(
                lambda: self.evaluate_once(http),
                lambda: self.settings.alerts_interval,
                "alert evaluation",
            )

    def _load(self) -> _Loaded:
        with self.session_factory() as db:
            rules = RuleService(db).enabled()
            members = self.members_of(db) if rules else []
            pipeline = any(r.indicator == "stats_pipeline_failing" for r in rules)
            failed = pipeline and last_run_failed(db)
            mutes = SilenceService(db).mutes(datetime.now(UTC))
            cluster = {key("stats_pipeline_failing"): 1.0 if failed else 0.0} if pipeline else {}
            burns = any(r.indicator in SLO_SIGNALS for r in rules)
            slo = SloService(db).burn_readings(time.time()) if burns else {}
            return _Loaded(rules, members, mutes, cluster, slo)

    async def evaluate_once(self, http: httpx.AsyncClient) -> list[AlertChange]:
        loaded = await asyncio.to_thread(self._load)
        readings: Readings = {}
        if loaded.rules:
            live, signals = await asyncio.gather(
                live_stats(http, loaded.members),
                self.signals.read(http, loaded.members, loaded.rules),
            )
            readings = merge(readings_of(live.members), signals, loaded.slo)
        now = time.time()
        changes = self.evaluator.evaluate(loaded.rules, readings, now, loaded.cluster)
        self.evaluations += 1
        if changes:
            await asyncio.to_thread(self._record, changes)
            at = datetime.fromtimestamp(now, UTC)
            announced = [
                c
                for c in changes
                if c.state != "pending"
                and silenced_until(loaded.mutes, c.alert.rule.id, c.alert.target, at) is None
            ]
            if announced:
                self._send(self._announce(loaded.members, announced))
        return changes

    def _record(self, changes: Sequence[AlertChange]) -> None:
        with self.session_factory() as db:
            RuleService(db).record(changes)
            resolved = [(c.alert.rule.id, c.alert.target) for c in changes if c.state == "resolved"]
            AckService(db).forget(resolved)

    def _send(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _announce(
        self, members: Sequence[MemberEndpoint], changes: Sequence[AlertChange]
    ) -> None:
        # a member that does not answer is never asked (admin_api/answering.py): the request
        # would wait in its socket and publish the alert again when it wakes (issue 34, 4.3)
        async with new_http_client(answering=self.answering) as http:
            alone, clustered = await _by_cluster(http, members)
            for change in changes:
                body = announcement(change)
                if self.settings.alerts_publish:
                    await asyncio.gather(*(self._publish(http, m, body) for m in alone))
                    # a cluster delivers a message to every member's clients: publish it once
                    for member in clustered:
                        if await self._publish(http, member, body):
                            break
                if self.settings.alerts_webhook:
                    await self._webhook(http, self.settings.alerts_webhook, body)

    async def _publish(
        self, http: httpx.AsyncClient, member: MemberEndpoint, body: dict[str, Any]
    ) -> bool:
        fields = {k: "" if v is None else str(v) for k, v in body.items() if k != "summary"}
        try:
            await member_access(http, member).execute(
                SUBJECTS_MBEAN, names.SUBJECTS_PUBLISH_ALERT, body["summary"], fields
            )
        except MemberFailure as exc:
            log.warning("alert not published on %s: %s", member.name, exc.detail)
            return False
        return True

    async def _webhook(self, http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> None:
        retries = self.settings.alerts_webhook_retries
        for attempt in range(retries + 1):
            try:
                response = await http.post(url, json=body)
                if response.status_code < 300:
                    return
                reason = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            # the URL is a secret (Slack-style hooks carry their key in the path): its origin only
            shown = redact_url_path(url)
            reason = reason.replace(url, shown)
            log.warning("alert webhook %s failed (attempt %d): %s", shown, attempt + 1, reason)
            if attempt < retries:
                await asyncio.sleep(0.5 * 2**attempt)


async def _by_cluster(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint]
) -> tuple[list[MemberEndpoint], list[MemberEndpoint]]:
    """Standalone members, and members of a cluster that answer (their own views say)."""
    return announcers(members, await cluster_views(http, members))


def announcers(
    members: Sequence[MemberEndpoint], views: Sequence[ClusterDocument | None]
) -> tuple[list[MemberEndpoint], list[MemberEndpoint]]:
    """Who announces (pure): standalone members each for itself, and the readable members of a
    cluster, one of which is enough.

    A member that cannot be read but that a readable clustered member lists is in that cluster:
    its healthy members announce for it, it is neither asked nor waited for. Before, it was
    taken as standalone and asked on its own: a hung member made the announcement 6 s late and,
    when it woke, ran the queued request and published the alert a second time (issue 34, 4.3).
    One that nobody lists is standalone (asked on its own; fails at once while silent)."""
    listed = {
        entry.name
        for view in views
        if view is not None and _clustered(view)
        for entry in view.members
    }
    alone = [
        m
        for m, v in zip(members, views, strict=True)
        if (v is None and m.name not in listed) or (v is not None and not _clustered(v))
    ]
    clustered = [m for m, v in zip(members, views, strict=True) if _clustered(v)]
    return alone, clustered


def _clustered(view: ClusterDocument | None) -> bool:
    return view is not None and view.mode != "standalone"
