"""Talking to members: Jolokia on their monitoring port, ``POST /publish`` on their client port.

Every call is an ``httpx.AsyncClient`` request with a 3 s timeout, the member's Basic credentials
(kept server-side) and no proxy from the environment. Failures raise :class:`MemberFailure`, a
:class:`~admin_api.problems.ProblemError` naming the member: 502 ``member_unreachable`` (no
connection), 502 ``member_auth_failed`` (the monitoring port refused the credentials), 502
``member_error`` (an HTTP or Jolokia error), 504 ``member_timeout``. Routes about one member let it
through; list routes catch it and mark the member ``reachable: false`` with its text.

All Jolokia requests are POSTed (one JSON request or a bulk array) so that arguments such as
subjects and session ids need no escaping.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from pushgrid.ops import names
from pushgrid.ops.api.members import MemberSource
from pushgrid.ops.attributes import ContractError

from .answering import Answering, Silenced, not_answering_text
from .problems import ProblemError

DEFAULT_TIMEOUT: Final = 3.0
FailureKind = Literal["unreachable", "timeout", "auth", "error"]

# the contract's names (pushgrid/ops/names.py) under the names the services import
SERVER_MBEAN: Final = names.SERVER
INDICATORS_MBEAN: Final = names.INDICATORS
SESSIONS_MBEAN: Final = names.SESSIONS
SUBJECTS_MBEAN: Final = names.SUBJECTS

_CODES: Final[dict[FailureKind, str]] = {
    "unreachable": "member_unreachable",
    "timeout": "member_timeout",
    "auth": "member_auth_failed",
    "error": "member_error",
}


@dataclass(frozen=True, slots=True)
class MemberEndpoint:
    """A member as the admin API knows it. The credentials never leave the admin API."""

    name: str
    monitor_url: str
    source: MemberSource
    client_url: str | None = None
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    created_at: datetime | None = None

    @property
    def auth(self) -> httpx.BasicAuth | None:
        if self.username is None or self.password is None:
            return None
        return httpx.BasicAuth(self.username, self.password)

    @property
    def has_credentials(self) -> bool:
        return self.auth is not None


class MemberFailure(ProblemError):
    """A member could not answer (see the module docstring for the statuses)."""

    def __init__(
        self,
        member: MemberEndpoint,
        kind: FailureKind,
        message: str,
        silent_seconds: float | None = None,
    ) -> None:
        status = 504 if kind == "timeout" else 502
        detail = f"member {member.name!r} ({member.monitor_url}): {message}"
        extensions = {} if silent_seconds is None else {"not_answering_seconds": silent_seconds}
        super().__init__(status, detail, _CODES[kind], member=member.name, extensions=extensions)
        self.kind = kind
        self.retryable = kind in ("unreachable", "timeout")
        self.message = message
        # how long the member has not answered (admin_api/answering.py); None: not silent
        self.silent_seconds = silent_seconds


@contextmanager
def fits_contract(member: MemberEndpoint) -> Iterator[None]:
    """Decoding a member's answer into the ops contract: an answer that does not fit is this
    member's failure (a 502 ``member_error`` naming the MBean and the attribute)."""
    try:
        yield
    except ContractError as exc:
        raise MemberFailure(member, "error", str(exc)) from None


class MemberJolokiaError(MemberFailure):
    """One Jolokia request failed on the member (the answer's ``status`` is not 200)."""

    def __init__(self, member: MemberEndpoint, status: int, error_type: str, error: str) -> None:
        super().__init__(member, "error", f"Jolokia {status} {error_type}: {error}")
        self.jolokia_status = status
        self.error_type = error_type
        self.error = error


def _transport_failure(
    member: MemberEndpoint, exc: httpx.HTTPError, timeout: float | None, silent: float | None = None
) -> MemberFailure:
    if isinstance(exc, httpx.TimeoutException):
        within = f" within {timeout:g} s" if timeout is not None else ""
        message = f"no answer{within} ({type(exc).__name__})"
        return MemberFailure(member, "timeout", message, silent)
    if isinstance(exc, httpx.TransportError):
        reason = str(exc) or type(exc).__name__
        return MemberFailure(member, "unreachable", f"unreachable: {reason}")
    return MemberFailure(member, "error", f"{type(exc).__name__}: {exc}")


class MemberHttp(httpx.AsyncClient):
    """The HTTP client of member calls, with the app's :class:`Answering` (None: no memory of
    silences). ``probe``: ask silent members anyway (the member watch) instead of failing at
    once with "not answering for N s"."""

    def __init__(
        self, timeout: float, answering: Answering | None = None, probe: bool = False
    ) -> None:
        super().__init__(timeout=httpx.Timeout(timeout), trust_env=False, follow_redirects=False)
        self.answering = answering
        self.probe = probe


def new_http_client(
    timeout: float = DEFAULT_TIMEOUT, answering: Answering | None = None, probe: bool = False
) -> MemberHttp:
    """The HTTP client for member calls (no environment proxies, bounded waits)."""
    return MemberHttp(timeout, answering, probe)


def _answering(http: httpx.AsyncClient) -> Answering | None:
    return http.answering if isinstance(http, MemberHttp) else None


def silences(http: httpx.AsyncClient, members: Sequence[MemberEndpoint]) -> dict[str, float]:
    """The members that do not answer, with how long (admin_api/answering.py)."""
    answering = _answering(http)
    if answering is None:
        return {}
    found = {m.name: answering.silent_for(m.monitor_url) for m in members}
    return {name: seconds for name, seconds in found.items() if seconds is not None}


class MemberClient:
    """Jolokia requests (and the test publish) to one member."""

    def __init__(self, http: httpx.AsyncClient, member: MemberEndpoint) -> None:
        self.http = http
        self.member = member

    @property
    def jolokia_url(self) -> str:
        return self.member.monitor_url.rstrip("/") + "/jolokia"

    def _skip_if_silent(self) -> None:
        """Fail at once for a member known not to answer (admin_api/answering.py)."""
        answering = _answering(self.http)
        if answering is None or (isinstance(self.http, MemberHttp) and self.http.probe):
            return
        silent = answering.silent_for(self.member.monitor_url)
        if silent is not None:
            raise MemberFailure(self.member, "timeout", not_answering_text(silent), silent)

    async def _post(self, url: str, **kwargs: Any) -> httpx.Response:
        """POST with the member's silence recorded: time-boxed, skipped while silent."""
        self._skip_if_silent()
        answering = _answering(self.http)
        key = self.member.monitor_url
        try:
            if answering is None or (isinstance(self.http, MemberHttp) and self.http.probe):
                response = await self.http.post(url, **kwargs)
            else:
                response = await answering.unless_silent(key, self.http.post(url, **kwargs))
        except Silenced as exc:
            raise MemberFailure(self.member, "timeout", str(exc), exc.seconds) from None
        except httpx.HTTPError as exc:
            silent = None
            if answering is not None:
                if isinstance(exc, httpx.TimeoutException):
                    silent = answering.missed(key)
                else:
                    answering.refused(key)
            raise _transport_failure(self.member, exc, self.http.timeout.read, silent) from None
        if answering is not None:
            answering.answered(key)
        return response

    async def bulk(self, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """POST a bulk request; the answers, one per request, each with its own ``status``."""
        response = await self._post(
            self.jolokia_url,
            json=list(requests),
            auth=self.member.auth or httpx.USE_CLIENT_DEFAULT,
        )
        if response.status_code == 401:
            raise MemberFailure(
                self.member,
                "auth",
                "the monitoring port refused the admin API's credentials (401): set "
                "Admin.MemberUsername/Admin.MemberPassword or the member's username/password",
            )
        if response.status_code != 200:
            raise MemberFailure(
                self.member, "error", f"HTTP {response.status_code} from {self.jolokia_url}"
            )
        try:
            answers = response.json()
        except ValueError:
            raise MemberFailure(self.member, "error", "the answer is not JSON") from None
        if not isinstance(answers, list) or len(answers) != len(requests):
            raise MemberFailure(self.member, "error", "not a Jolokia bulk answer")
        if not all(isinstance(answer, dict) for answer in answers):
            raise MemberFailure(self.member, "error", "not a Jolokia bulk answer")
        return answers

    def value(self, answer: dict[str, Any]) -> Any:
        """The ``value`` of one answer, or :class:`MemberJolokiaError`."""
        status = answer.get("status")
        if status != 200:
            raise MemberJolokiaError(
                self.member,
                int(status) if isinstance(status, int) else 500,
                str(answer.get("error_type", "error")),
                str(answer.get("error", "unknown error")),
            )
        return answer.get("value")

    async def request(self, request: dict[str, Any]) -> Any:
        (answer,) = await self.bulk([request])
        return self.value(answer)

    async def read(self, mbean: str, attributes: Sequence[str]) -> dict[str, Any]:
        value = await self.request({"type": "read", "mbean": mbean, "attribute": list(attributes)})
        if not isinstance(value, dict):
            raise MemberFailure(self.member, "error", f"unexpected answer reading {mbean}")
        return value

    async def execute(self, mbean: str, operation: str, *arguments: Any) -> Any:
        return await self.request(
            {"type": "exec", "mbean": mbean, "operation": operation, "arguments": list(arguments)}
        )

    async def publish(
        self, client_url: str, body: dict[str, Any], token: str | None
    ) -> httpx.Response:
        """``POST <client_url>/publish`` (transport failures raise :class:`MemberFailure`)."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return await self._post(client_url.rstrip("/") + "/publish", json=body, headers=headers)


# --- URLs ------------------------------------------------------------------------------------

_ANY_HOST: Final = {"", "*", "0.0.0.0", "::", "[::]"}


def check_base_url(url: str) -> str:
    """A member URL: ``http(s)://host[:port][/path]``, no credentials, query or fragment.

    Returns it without a trailing ``/``; raises ``ValueError`` saying what is wrong.
    """
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{url!r} must start with http:// or https://")
    if not parts.hostname:
        raise ValueError(f"{url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{url!r} holds credentials: give them as username and password")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r} may not have a query or a fragment")
    if port == 0:
        raise ValueError(f"{url!r} has port 0")
    if any(ch.isspace() or ord(ch) < 32 for ch in text):
        raise ValueError(f"{url!r} contains spaces or control characters")
    return text.rstrip("/")


_JMX_URL: Final = re.compile(r"service:jmx:rmi://[^/]*/jndi/rmi://(\[[^\]]+\]|[^:/]+):(\d+)/\S+")


def check_jmx_url(url: str) -> str:
    """A JMX URL ``service:jmx:rmi:///jndi/rmi://host:port/jmxrmi``, or ``ValueError``."""
    text = url.strip()
    match = _JMX_URL.fullmatch(text)
    if match is None:
        raise ValueError(f"{url!r} is not service:jmx:rmi:///jndi/rmi://host:port/jmxrmi")
    if not 0 < int(match.group(2)) < 65536:
        raise ValueError(f"{url!r}: port out of range")
    return text


def check_monitor_url(url: str) -> str:
    """A member's monitoring URL: Jolokia base URL (http/https) or a JMX service URL."""
    return check_jmx_url(url) if url.strip().startswith("service:jmx:") else check_base_url(url)


def monitor_hostname(url: str) -> str | None:
    """The host of a member's monitoring URL (Jolokia or JMX)."""
    match = _JMX_URL.fullmatch(url.strip())
    if match is not None:
        return match.group(1).strip("[]")
    return urlsplit(url).hostname


def derive_client_url(monitor_url: str, listen: Sequence[str]) -> str | None:
    """The client-port URL from a member's first ``Listen`` address (its ``Settings``
    attribute: a list, pushgrid/ops/server.py).

    A wildcard host (``*``, ``0.0.0.0``, ``::``, empty) is replaced with the monitoring URL's host,
    which is how the admin API reaches that machine anyway.
    """
    if not listen:
        return None
    host, sep, port = listen[0].rpartition(":")
    if not sep or not port.isdigit():
        return None
    monitor_host = monitor_hostname(monitor_url) or "127.0.0.1"
    if host.strip() in _ANY_HOST:
        host = monitor_host
    host = host.strip("[]")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return urlunsplit(("http", f"{host}:{int(port)}", "", "", ""))


T = TypeVar("T")


async def read_document(http: httpx.AsyncClient, member: MemberEndpoint, mbean: str) -> Any:
    """The ``Document`` attribute of a member's MBean (raises :class:`MemberFailure`)."""
    return await MemberClient(http, member).request(
        {"type": "read", "mbean": mbean, "attribute": "Document"}
    )


async def each_member(
    http: httpx.AsyncClient,
    members: Sequence[MemberEndpoint],
    read: Callable[[httpx.AsyncClient, MemberEndpoint], Awaitable[T]],
    unreachable: Callable[[MemberEndpoint, str], T],
) -> list[T]:
    """``read`` every member at once, in order; a member that fails is ``unreachable(member,
    detail)`` instead (one member down never hides the others)."""

    async def one(member: MemberEndpoint) -> T:
        try:
            return await read(http, member)
        except MemberFailure as exc:
            return unreachable(member, exc.detail)

    return list(await asyncio.gather(*(one(m) for m in members)))
