"""What the subject browser page needs from the admin API (``/subjects``, ADR 051). The answers
stay the admin API's JSON: the page only displays them. Implemented by
:class:`~console.http_provider.HttpProvider` through :class:`SubjectHttpMixin`; a provider without
these methods (the demo data provider) makes the page say so instead of failing.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote

from .ops_provider import ENTITLEMENT_HEADER, _Requests


@runtime_checkable
class SubjectBrowserProvider(Protocol):
    def subject_page(self, pattern: str, sort: str, offset: int, limit: int) -> dict[str, Any]: ...

    def subject_history(
        self, member: str, subject: str, limit: int, entitlement_token: str | None = None
    ) -> dict[str, Any]: ...

    def remove_snapshot(
        self, subject: str, entitlement_token: str | None = None
    ) -> dict[str, Any]: ...

    def subject_sessions(self, subject: str, limit: int) -> dict[str, Any]: ...

    def unsubscribe(
        self, member: str, session_id: str, subject: str, entitlement_token: str | None = None
    ) -> None: ...


def _token(entitlement_token: str | None) -> dict[str, str] | None:
    return {ENTITLEMENT_HEADER: entitlement_token} if entitlement_token else None


class SubjectHttpMixin:
    """The :class:`SubjectBrowserProvider` methods over ``/api/v1`` (needs ``_request``)."""

    def subject_page(
        self: _Requests, pattern: str, sort: str, offset: int, limit: int
    ) -> dict[str, Any]:
        params = {"pattern": pattern, "sort": sort, "offset": offset, "limit": limit}
        return dict(self._request("GET", "/subjects", params))

    def subject_history(
        self: _Requests,
        member: str,
        subject: str,
        limit: int,
        entitlement_token: str | None = None,
    ) -> dict[str, Any]:
        params = {"subject": subject, "limit": limit}
        path = f"/members/{quote(member, safe='')}/subjects/history"
        return dict(self._request("GET", path, params, headers=_token(entitlement_token)))

    def remove_snapshot(
        self: _Requests, subject: str, entitlement_token: str | None = None
    ) -> dict[str, Any]:
        params = {"subject": subject}
        return dict(
            self._request("DELETE", "/subjects/snapshot", params, headers=_token(entitlement_token))
        )

    def subject_sessions(self: _Requests, subject: str, limit: int) -> dict[str, Any]:
        return dict(self._request("GET", "/sessions", {"subject": subject, "limit": limit}))

    def unsubscribe(
        self: _Requests,
        member: str,
        session_id: str,
        subject: str,
        entitlement_token: str | None = None,
    ) -> None:
        path = f"/members/{quote(member, safe='')}/sessions/{quote(session_id, safe='')}/subjects"
        self._request("DELETE", path, {"subject": subject}, headers=_token(entitlement_token))
