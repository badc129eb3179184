"""What the operators' pages (hot and watched subjects, alerts, live trace) need from the admin API.

The answers stay the admin API's JSON (dicts): these pages only display them. Implemented by
:class:`~console.http_provider.HttpProvider` through :class:`OpsHttpMixin`; a provider without
these methods (the demo data provider) makes the pages say so instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

from pushgrid.ops.api.delivery_windows import DeliveryWindowList

#: the header the admin API reads the operator's entitlement token from (admin_api's TOKEN_HEADER)
ENTITLEMENT_HEADER: Final = "X-Entitlement-Token"


@runtime_checkable
class OpsProvider(Protocol):
    def hot_subjects(self) -> dict[str, Any]: ...

    def watched_subjects(self) -> dict[str, Any]: ...

    def watch(self, pattern: str) -> dict[str, Any]: ...

    def unwatch(self, pattern: str) -> dict[str, Any]: ...

    def watched_statistics(self, pattern: str) -> dict[str, Any]: ...

    def alerts(self) -> list[dict[str, Any]]: ...

    def alert_rules(self) -> list[dict[str, Any]]: ...

    def alert_history(
        self, limit: int = 50, filters: Mapping[str, Any] | None = None, offset: int = 0
    ) -> dict[str, Any]:
        """One page of ``GET /alerts/history`` (items, total, offset, limit); ``filters``: the
        route's (rule_id, target, state, since, until)."""
        ...

    def create_rule(self, rule: Mapping[str, Any]) -> dict[str, Any]: ...

    def patch_rule(self, rule_id: int, changes: Mapping[str, Any]) -> dict[str, Any]: ...

    def delete_rule(self, rule_id: int) -> None: ...

    def acknowledge(self, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def silences(self) -> list[dict[str, Any]]: ...

    def silence(self, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def end_silence(self, silence_id: int) -> None: ...

    def open_trace(self, member: str, subject: str, token: str | None) -> dict[str, Any]: ...

    def read_trace(self, trace_id: str, after: int) -> dict[str, Any]: ...

    def close_trace(self, trace_id: str) -> None: ...

    def session_detail(
        self, member: str, session_id: str, entitlement_token: str | None = None
    ) -> dict[str, Any]:
        """``entitlement_token``: frames of subjects it does not grant come redacted."""
        ...

    def slow_consumers(self, limit: int = 20) -> dict[str, Any]: ...

    def open_member_trace(self, by: str, value: str, member: str | None) -> dict[str, Any]: ...

    def read_member_trace(self, trace_id: str, after: int) -> dict[str, Any]: ...

    def member_trace_jsonl(self, trace_id: str) -> str: ...

    def close_member_trace(self, trace_id: str) -> None: ...


class _Requests(Protocol):
    def _request(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any: ...

    def _text(self, path: str, accept: str) -> str: ...


class OpsHttpMixin:
    """The :class:`OpsProvider` methods over ``/api/v1`` (needs ``_request``)."""

    def hot_subjects(self: _Requests) -> dict[str, Any]:
        return dict(self._request("GET", "/hot-subjects"))

    def canaries(self: _Requests) -> dict[str, Any]:
        """The canary matrix (console/pages/delivery.py)."""
        return dict(self._request("GET", "/delivery/canaries"))

    def delivery_latency(self: _Requests) -> dict[str, Any]:
        """Latency and loss per scope (console/pages/delivery_latency.py)."""
        return dict(self._request("GET", "/delivery/latency"))

    def delivery_windows(self: _Requests) -> DeliveryWindowList:
        """The pipeline's delivery latency windows (console/pages/statistics_delivery.py)."""
        return DeliveryWindowList.model_validate(self._request("GET", "/stats/delivery"))

    def accounting(self: _Requests) -> dict[str, Any]:
        """Delivery accounting (console/pages/delivery_accounting.py)."""
        return dict(self._request("GET", "/delivery/accounting"))

    def slow_consumer_offenders(self: _Requests) -> dict[str, Any]:
        """Slow consumers by client, most closes first (console/pages/delivery_accounting.py)."""
        return dict(self._request("GET", "/slow-consumers/offenders"))

    def watched_subjects(self: _Requests) -> dict[str, Any]:
        return dict(self._request("GET", "/watched-subjects"))

    def slos(self: _Requests) -> dict[str, Any]:
        """The objectives and where they stand (console/pages/slos.py, ADR 055)."""
        return dict(self._request("GET", "/slos"))

    def slo_history(self: _Requests, objective_id: int, points: int = 120) -> dict[str, Any]:
        """An objective's budget left and burn rate over its period, in steps."""
        return dict(self._request("GET", f"/slos/{objective_id}/history", {"points": points}))

    def watch(self: _Requests, pattern: str) -> dict[str, Any]:
        return dict(self._request("POST", "/watched-subjects", body={"pattern": pattern}))

    def unwatch(self: _Requests, pattern: str) -> dict[str, Any]:
        return dict(self._request("DELETE", "/watched-subjects", {"pattern": pattern}))

    def watched_statistics(self: _Requests, pattern: str) -> dict[str, Any]:
        """The pattern's windows stored by the statistics pipeline (ADR 030)."""
        return dict(self._request("GET", "/watched-subjects/statistics", {"pattern": pattern}))

    def alerts(self: _Requests) -> list[dict[str, Any]]:
        return list(self._request("GET", "/alerts")["items"])

    def alert_rules(self: _Requests) -> list[dict[str, Any]]:
        return list(self._request("GET", "/alerts/rules")["items"])

    def alert_history(
        self: _Requests, limit: int = 50, filters: Mapping[str, Any] | None = None, offset: int = 0
    ) -> dict[str, Any]:
        params = {"limit": limit, "offset": offset, **(filters or {})}
        return dict(self._request("GET", "/alerts/history", params))

    def create_rule(self: _Requests, rule: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._request("POST", "/alerts/rules", body=dict(rule)))

    def patch_rule(self: _Requests, rule_id: int, changes: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._request("PATCH", f"/alerts/rules/{rule_id}", body=dict(changes)))

    def delete_rule(self: _Requests, rule_id: int) -> None:
        self._request("DELETE", f"/alerts/rules/{rule_id}")

    def acknowledge(self: _Requests, body: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._request("POST", "/alerts/acknowledgements", body=dict(body)))

    def silences(self: _Requests) -> list[dict[str, Any]]:
        return list(self._request("GET", "/alerts/silences")["items"])

    def silence(self: _Requests, body: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._request("POST", "/alerts/silences", body=dict(body)))

    def end_silence(self: _Requests, silence_id: int) -> None:
        self._request("DELETE", f"/alerts/silences/{silence_id}")

    def open_trace(self: _Requests, member: str, subject: str, token: str | None) -> dict[str, Any]:
        body = {"subject": subject, "entitlement_token": token or None}
        return dict(self._request("POST", f"/members/{member}/traces", body=body))

    def read_trace(self: _Requests, trace_id: str, after: int) -> dict[str, Any]:
        return dict(self._request("GET", f"/traces/{trace_id}", {"after": after}))

    def close_trace(self: _Requests, trace_id: str) -> None:
        self._request("DELETE", f"/traces/{trace_id}")

    def session_detail(
        self: _Requests, member: str, session_id: str, entitlement_token: str | None = None
    ) -> dict[str, Any]:
        headers = {ENTITLEMENT_HEADER: entitlement_token} if entitlement_token else None
        path = f"/members/{member}/sessions/{session_id}"
        return dict(self._request("GET", path, headers=headers))

    def slow_consumers(self: _Requests, limit: int = 20) -> dict[str, Any]:
        """The cluster's latest slow-consumer closes (``/slow-consumers``, newest first)."""
        return dict(self._request("GET", "/slow-consumers", {"limit": limit}))

    def open_member_trace(
        self: _Requests, by: str, value: str, member: str | None
    ) -> dict[str, Any]:
        """A trace by client id or subject, recorded by the members (``POST /member-traces``;
        ``member`` None: the whole cluster)."""
        body = {"by": by, "value": value, "member": member or None}
        return dict(self._request("POST", "/member-traces", body=body))

    def read_member_trace(self: _Requests, trace_id: str, after: int) -> dict[str, Any]:
        return dict(self._request("GET", f"/member-traces/{trace_id}", {"after": after}))

    def member_trace_jsonl(self: _Requests, trace_id: str) -> str:
        """Every event the admin API keeps of the trace, as its JSON lines download."""
        return self._text(f"/member-traces/{trace_id}/events.jsonl", "application/x-ndjson")

    def close_member_trace(self: _Requests, trace_id: str) -> None:
        self._request("DELETE", f"/member-traces/{trace_id}")
