"""The console's provider over the admin API (``/api/v1``, docs/admin-api.md), with httpx.

Every request carries the operator's token (``Authorization: Bearer pgt_...``). An answer other
than 2xx becomes a :class:`~console.provider.ProviderError` with the problem document's status,
title and detail (RFC 9457; ``member`` is added to the detail); a connection failure is status 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

import httpx

from pushgrid.ops.api.audit import AuditOut
from pushgrid.ops.api.cluster import ClusterOut
from pushgrid.ops.api.history import HistoryOut
from pushgrid.ops.api.jobs import JobRunOut
from pushgrid.ops.api.me import Me
from pushgrid.ops.api.sessions import SessionPage
from pushgrid.ops.api.subjects import PresenceOut, PublishOut, SnapshotOut, SubjectInfo
from pushgrid.ops.api.trends import TrendPointOut, TrendSeries
from pushgrid.ops.panel import MemberPanel
from pushgrid.ops.statistics import TrendQuery

from .ops_provider import ENTITLEMENT_HEADER, OpsHttpMixin
from .provider import (
    CLUSTER,
    AuditFilter,
    LiveIndicatorView,
    LiveOverview,
    LiveScope,
    MemberCard,
    MomentsView,
    ProviderError,
    StatRow,
    SubjectView,
    WindowStatistics,
    processes_of,
)
from .subject_provider import SubjectHttpMixin

API: Final = "/api/v1"
TIMEOUT: Final = 10.0


def unix(text: str | None) -> int | None:
    """An ISO 8601 instant of the API as a Unix second."""
    if not text:
        return None
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def unix_float(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def problem(response: httpx.Response) -> ProviderError:
    """The ProviderError of a non-2xx answer (a problem document, or whatever came back)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        title = str(body.get("title") or response.reason_phrase or "Error")
        detail = str(body.get("detail") or "")
        member = body.get("member")
        if member and str(member) not in detail:
            detail = f"{detail} (member {member})".strip()
        return ProviderError(int(body.get("status") or response.status_code), title, detail)
    text = response.text.strip()[:300]
    return ProviderError(response.status_code, response.reason_phrase or "Error", text)


class HttpProvider(OpsHttpMixin, SubjectHttpMixin):
    """:class:`~console.provider.ConsoleProvider` over the admin API at ``base_url``."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``token``: the API token; empty with ``headers`` carrying a signed-in browser's
        session cookie and CSRF token instead (console/mount.py, ADR 052)."""
        self.base_url = base_url.rstrip("/")
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=self.base_url + API,
            headers={**auth, "Accept": "application/json", **(headers or {})},
            timeout=timeout,
            trust_env=False,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HttpProvider:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- plumbing ---------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        response = self._send(method, path, params, body, headers)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ProviderError(
                response.status_code, "Bad answer", f"{path} did not answer JSON"
            ) from None

    def _text(self, path: str, accept: str) -> str:
        """A GET answered in another type than JSON (a JSON lines download): its text."""
        return self._send("GET", path, None, None, {"Accept": accept}).text

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        body: Any,
        headers: Mapping[str, str] | None,
    ) -> httpx.Response:
        """One request; a transport failure or a problem answer as :class:`ProviderError`."""
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, path, params=clean, json=body, headers=headers)
        except httpx.TimeoutException:
            raise ProviderError(
                0, "Admin API timeout", f"{method} {self.base_url}{API}{path} took too long"
            ) from None
        except httpx.HTTPError as exc:
            raise ProviderError(
                0, "Admin API unreachable", f"{self.base_url}: {exc or type(exc).__name__}"
            ) from None
        if response.status_code >= 400:
            raise problem(response)
        return response

    def _get(self, path: str, **params: Any) -> Any:
        return self._request("GET", path, params)

    # --- the provider -----------------------------------------------------------------------

    def whoami(self) -> Me:
        return Me.model_validate(self._get("/me"))

    def members(self) -> list[MemberCard]:
        return [member_of(item) for item in self._get("/members")["items"]]

    def live(self) -> LiveOverview:
        """One answer per refresh (``/cluster/overview``): the cards, the counts and the
        cluster badge come from the same reads, so they cannot disagree (issue 34, 4.4)."""
        data = self._get("/cluster/overview")
        members = [member_of(item) for item in data["members"]["items"]]
        overview = live_overview(members, data["live"])
        return replace(overview, topology=ClusterOut.model_validate(data["cluster"]))

    def history(self, since: int | None = None, until: int | None = None) -> HistoryOut:
        return HistoryOut.model_validate(self._get("/stats/history", since=since, until=until))

    def window_stats(self, scope: str) -> WindowStatistics:
        data = self._get("/stats/windows", scope=scope)
        found = window_statistics(data)
        return found[0] if found else WindowStatistics(scope, None, None, True, None, [])

    def all_window_stats(self) -> list[WindowStatistics]:
        return window_statistics(self._get("/stats/windows"))

    def scopes(self) -> list[str]:
        return [stats.scope for stats in self.all_window_stats()]

    def member_names(self) -> list[str]:
        # the directory's names only: /members would read every member's agent (issue 30)
        return list(self._get("/member-names")["items"])

    def trend(self, query: TrendQuery) -> list[TrendPointOut]:
        return TrendSeries.model_validate(self._get("/stats/trend", **query.params())).points

    def subject(self, subject: str, entitlement_token: str | None = None) -> SubjectView:
        """The subject on every member: the snapshot (the first member that has one) and the
        subscribers of each; members that fail (a member with entitlement refuses without a
        granting ``entitlement_token``: 403) are reported in ``errors``."""
        headers = {ENTITLEMENT_HEADER: entitlement_token} if entitlement_token else None
        snapshot: SnapshotOut | None = None
        subscribers: dict[str, int] = {}
        errors: dict[str, str] = {}
        members = self.members()
        for member in members:
            if not member.up:
                errors[member.name] = member.error or "unreachable"
                continue
            try:
                data = self._request(
                    "GET", f"/members/{member.name}/subjects", {"subject": subject}, headers=headers
                )
            except ProviderError as exc:
                if exc.status in (400, 422):  # the subject itself is wrong: say so once
                    raise
                errors[member.name] = f"{exc.title}: {exc.detail}"
                continue
            info = SubjectInfo.model_validate(data)
            subscribers[member.name] = info.subscribers
            snapshot = snapshot or info.snapshot
        if members and not subscribers and errors:
            raise ProviderError(
                502, "No member answered", "; ".join(f"{m}: {e}" for m, e in errors.items())
            )
        return SubjectView(subject, snapshot, subscribers, errors)

    def presence(self, subject: str, entitlement_token: str | None = None) -> PresenceOut:
        """``GET /members/{name}/presence`` of the first member up that answers."""
        headers = {ENTITLEMENT_HEADER: entitlement_token} if entitlement_token else None
        failure: ProviderError | None = None
        for member in self.members():
            if not member.up:
                continue
            try:
                data = self._request(
                    "GET", f"/members/{member.name}/presence", {"subject": subject}, headers=headers
                )
            except ProviderError as exc:
                if exc.status in (400, 403, 422):  # the same answer from every member
                    raise
                failure = exc
                continue
            return PresenceOut.model_validate(data)
        raise failure or ProviderError(502, "No member answered", "no member is up")

    def publish(self, subject: str, content: str, fields: Mapping[str, str]) -> PublishOut:
        """Publish through the first reachable member (the engine delivers it cluster-wide)."""
        members = self.members()
        target = next((m for m in members if m.up), None)
        if target is None:
            raise ProviderError(502, "No member reachable", "every member is down")
        body = {"subject": subject, "content": content, "fields": dict(fields)}
        data = self._request("POST", f"/members/{target.name}/publish", body=body)
        return PublishOut.model_validate(data)

    def sessions(
        self,
        search: str = "",
        member: str | None = None,
        offset: int = 0,
        limit: int = 20,
        filters: Mapping[str, str] | None = None,
    ) -> SessionPage:
        """A page of sessions; ``search`` is a subject when it starts with '/', a part of the
        remote address when it holds a ':' or is an IPv4 prefix, else a part of the client id."""
        params = {"sort": "-connected_since", **search_params(search), **(filters or {})}
        path = "/sessions" if member is None else f"/members/{member}/sessions"
        data = self._get(path, offset=offset, limit=limit, **params)
        return SessionPage.model_validate(data)

    def disconnect(self, member: str, session_id: str) -> bool:
        self._request("DELETE", f"/members/{member}/sessions/{session_id}")
        return True

    def jobs(self, limit: int = 20) -> list[JobRunOut]:
        return [JobRunOut.model_validate(item) for item in self._get("/jobs", limit=limit)["items"]]

    def start_job(self) -> JobRunOut:
        return JobRunOut.model_validate(self._request("POST", "/jobs", body={}))

    def audit(
        self, limit: int = 50, filters: AuditFilter | None = None, offset: int = 0
    ) -> list[AuditOut]:
        params = (filters or AuditFilter()).params()
        answer = self._get("/audit", limit=limit, offset=offset or None, **params)
        return [AuditOut.model_validate(item) for item in answer["items"]]


# --- JSON of the admin API -> provider values (pure) ----------------------------------------


def member_of(item: Mapping[str, Any]) -> MemberCard:
    return MemberCard(
        name=str(item["name"]),
        url=str(item.get("monitor_url") or ""),
        up=bool(item.get("reachable")),
        error=item.get("error"),
        server_name=item.get("server_name"),
        version=item.get("version"),
        uptime=item.get("uptime_seconds"),
        engine=item.get("engine"),
        connected_users=item.get("connected_users"),
        subscriptions=item.get("subscriptions"),
        panel=None if item.get("panel") is None else MemberPanel.model_validate(item["panel"]),
        not_answering=item.get("not_answering_seconds"),
        processes=processes_of(item.get("processes")),
    )


def live_overview(members: list[MemberCard], data: Mapping[str, Any]) -> LiveOverview:
    """``GET /stats/live`` (+ ``GET /members``) as the Overview's values.

    The cluster's sample second is the newest of its members' (so a chart gets one point per
    sample, however often it asks); its indicators have current values only.
    """
    scopes: dict[str, LiveScope] = {}
    newest: int | None = None
    for item in data.get("members") or []:
        name = str(item["member"])
        ts = unix(item.get("sample_time"))
        if item.get("reachable") and ts is not None:
            newest = ts if newest is None else max(newest, ts)
        indicators = {
            str(i["name"]): LiveIndicatorView(
                str(i["name"]),
                i.get("current"),
                {
                    str(w): MomentsView(
                        int(v.get("count") or 0), v.get("max"), v.get("avg"), v.get("stddev")
                    )
                    for w, v in (i.get("windows") or {}).items()
                },
            )
            for i in item.get("indicators") or []
        }
        error = None if item.get("reachable") else str(item.get("error") or "unreachable")
        scopes[name] = LiveScope(name, ts, indicators, error)
    cluster_data = data.get("cluster") or {}
    cluster = LiveScope(
        CLUSTER,
        newest,
        {
            str(i["name"]): LiveIndicatorView(str(i["name"]), i.get("current"))
            for i in cluster_data.get("indicators") or []
        },
        None if newest is not None or not scopes else "no member could be read",
    )
    # A member the live answer knows but the member list missed (registered in between).
    known = {m.name for m in members}
    for name, scope in scopes.items():
        if name not in known:
            members.append(MemberCard(name, "", scope.error is None, scope.error))
    return LiveOverview(members, cluster, scopes)


def window_statistics(data: Mapping[str, Any]) -> list[WindowStatistics]:
    """``GET /stats/windows`` grouped by scope (in the API's order: cluster first)."""
    stale_after = data.get("stale_after_seconds")
    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for item in data.get("items") or []:
        grouped[str(item["scope"])].append(item)
    out: list[WindowStatistics] = []
    for scope, items in grouped.items():
        as_ofs = [unix(i["as_of"]) for i in items]
        computed = max((str(i["computed_at"]) for i in items), key=lambda t: unix_float(t) or 0)
        out.append(
            WindowStatistics(
                scope=scope,
                as_of=max((a for a in as_ofs if a is not None), default=None),
                computed_at=computed,
                stale=any(bool(i.get("stale")) for i in items),
                stale_after=None if stale_after is None else float(stale_after),
                rows=[
                    StatRow(
                        str(i["indicator"]),
                        str(i["window"]),
                        int(i["count"]),
                        i.get("max"),
                        i.get("avg"),
                        i.get("stddev"),
                        float(i.get("coverage", 1.0)),
                    )
                    for i in items
                ],
            )
        )
    return out


def search_params(search: str) -> dict[str, str]:
    text = search.strip()
    if not text:
        return {}
    if text.startswith("/"):
        return {"subject": text}
    if ":" in text or text.replace(".", "").isdigit():
        return {"remote": text}
    return {"client_id": text}
