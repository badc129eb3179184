"""The monitoring port (MonitorHTTP.Listen): /jolokia, /stats, /metrics, /health.

Optional HTTP Basic authentication (MonitorUsername / MonitorPassword): a request without the
right credentials gets 401 and nothing else. After AuthFailuresBeforeBackoff failures from one
address, its next attempts get 429 (Retry-After) without being checked, for a back-off that
doubles per failure up to AuthBackoffMax seconds (brute-force protection, docs/security.md).

Safe by default against a browser on the operator's machine (issue 22, :class:`Boundary`): the
``Host`` must be an IP address or a name of MonitorAllowedHosts (DNS rebinding), a browser's
``Origin`` must be this port's own (cross-site requests), a POST must be ``application/json``
(no CORS-simple form or ``text/plain`` post), and no answer carries CORS headers.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import ipaddress
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import parse_qs, parse_qsl, urlsplit

import h11
from prometheus_client import CollectorRegistry

from pushgrid.kernel.throttle import AuthThrottle, host_of

from ..transport.http import Response, json_response, problem
from . import accounting_view, canary_view
from .cluster_view import status_dict
from .jolokia import JolokiaAgent, content_type
from .ports import MonitoredNode
from .prometheus_exporter import CONTENT_TYPE, exposition
from .stats_page import stats_document, stats_text

JOLOKIA_BASE = "/jolokia"
#: headers every monitoring answer carries (its JSON and text are data, never a page)
SECURITY_HEADERS = (
    ("x-content-type-options", "nosniff"),
    ("content-security-policy", "default-src 'none'; frame-ancestors 'none'"),
    ("referrer-policy", "no-referrer"),
)
#: media types a POST may carry (a CORS-"simple" text/plain or form body is refused)
POST_MEDIA_TYPES = frozenset({"application/json"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "*", ""})


def _host_name(value: str) -> str:
    """``Host`` / netloc text -> the bare, lower-case host (``[::1]:8900`` -> ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Boundary:
    """Which ``Host`` names the monitoring port answers to: MonitorAllowedHosts (``.suffix``
    entries allow every name under it) plus the names it listens on; any IP address (a
    DNS-rebinding page can only send its own *name*); ``*`` answers every name."""

    allowed_hosts: frozenset[str] = frozenset({"localhost"})

    @staticmethod
    def of(allowed: Iterable[str], listen_hosts: Iterable[str] = ()) -> Boundary:
        names = {_host_name(h) for h in allowed} | {
            _host_name(h) for h in listen_hosts if h not in WILDCARD_HOSTS
        }
        if "*" in {h.strip() for h in allowed}:
            names.add("*")
        return Boundary(frozenset(names))

    def host_allowed(self, host: str) -> bool:
        """An entry ``.example.com`` allows that name and every name under it."""
        name = _host_name(host)
        if "*" in self.allowed_hosts or name in self.allowed_hosts or _is_ip(name):
            return True
        return any(
            entry.startswith(".") and (name.endswith(entry) or name == entry[1:])
            for entry in self.allowed_hosts
        )

    def refusal(self, request: h11.Request) -> Response | None:
        """403 for a foreign ``Host`` or ``Origin`` (before credentials are looked at)."""
        host = _header(request, b"host")
        if host is not None and not self.host_allowed(host):
            return problem(
                403,
                "host_not_allowed",
                f"Host {host!r} is not one of this monitoring port's names: add it to "
                "MonitorAllowedHosts (a check against DNS rebinding)",
            )
        origin = _header(request, b"origin")
        if origin is not None and not _same_origin(origin, host):
            return problem(
                403,
                "origin_not_allowed",
                f"requests from {origin!r} (a page of another site) are refused: the "
                "monitoring port serves no browser page but its own",
            )
        return None

    @staticmethod
    def media_refusal(request: h11.Request) -> Response | None:
        """415 for a POST that is not JSON: checked after the credentials, so a request
        without them learns nothing but 401, whatever its method (issue 34)."""
        if request.method != b"POST":
            return None
        media = (_header(request, b"content-type") or "").partition(";")[0].strip().lower()
        if media in POST_MEDIA_TYPES:
            return None
        return problem(
            415,
            "unsupported_media_type",
            f"a POST needs Content-Type: application/json, not {media or 'none'!r}",
        )


def _header(request: h11.Request, name: bytes) -> str | None:
    for key, value in request.headers:
        if key == name:
            return value.decode("latin-1")
    return None


def _same_origin(origin: str, host: str | None) -> bool:
    """True when a browser's ``Origin`` is this port itself (``http(s)://`` + our ``Host``)."""
    scheme, sep, netloc = origin.strip().lower().partition("://")
    if not sep or scheme not in ("http", "https") or host is None:
        return False  # "null" (sandboxed or file: pages), or no Host to compare with
    return netloc.rstrip("/") == host.strip().lower()


def _finish(response: Response) -> Response:
    """No CORS header leaves this port; every answer gets :data:`SECURITY_HEADERS`."""
    headers = [(k, v) for k, v in response.headers if not k.startswith("access-control-")]
    return Response(response.status, response.body, [*headers, *SECURITY_HEADERS])


def _has_credentials(request: h11.Request) -> bool:
    return any(name == b"authorization" for name, _ in request.headers)


class MonitorRoutes:
    """``credentials`` is ``(MonitorUsername, MonitorPassword)``, or None for no authentication."""

    def __init__(
        self,
        node: MonitoredNode,
        jolokia: JolokiaAgent,
        prometheus: CollectorRegistry,
        throttle: AuthThrottle,
        credentials: tuple[str, str] | None,
        boundary: Boundary | None = None,
    ) -> None:
        self.node = node
        self.boundary = boundary or Boundary()
        self.jolokia = jolokia
        self.prometheus = prometheus
        self.throttle = throttle
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jolokia")
        self._credentials: bytes | None = None
        if credentials is not None:
            self._credentials = f"{credentials[0]}:{credentials[1]}".encode()

    async def __call__(self, request: h11.Request, body: bytes, remote: str) -> Response:
        return _finish(await self._route(request, body, remote))

    async def _route(self, request: h11.Request, body: bytes, remote: str) -> Response:
        refusal = (
            self.boundary.refusal(request)
            or self._authenticate(request, host_of(remote))
            or self.boundary.media_refusal(request)
        )
        if refusal is not None:
            return refusal
        raw_target = request.target.decode("utf-8", "replace")
        url = urlsplit(raw_target)
        method = request.method.decode("ascii", "replace")
        path = url.path
        if path == JOLOKIA_BASE or path.startswith(JOLOKIA_BASE + "/"):
            return await self._jolokia(method, raw_target, body)
        if method not in ("GET", "HEAD"):
            return problem(405, "method_not_allowed", f"{path} accepts GET")
        if path == "/stats":
            document = stats_document(self.node.read_model(), self.node.live_state())
            document["canaries"] = canary_view.stats_section(self.node.canary_state())
            document["accounting"] = accounting_view.stats_section(self.node.accounting())
            if parse_qs(url.query).get("format", [""])[0] == "json":
                return json_response(200, document)
            text = stats_text(document).encode()
            return Response(200, text, [("content-type", "text/plain; charset=utf-8")])
        if path == "/metrics":
            data = exposition(self.prometheus)
            return Response(200, data, [("content-type", CONTENT_TYPE)])
        if path == "/health":
            return self._health()
        return problem(404, "not_found", f"no resource at {path}")

    def _health(self) -> Response:
        healthy = not self.node.stopping
        cluster = self.node.cluster_status()
        live = self.node.live_state()
        verdict = cluster.verdict  # metrics/health.py: the same health as every other view
        return json_response(
            200 if healthy else 503,
            {
                "status": verdict.status if healthy else "stopping",
                "reasons": [reason.as_dict() for reason in verdict.reasons],
                "cluster": status_dict(cluster),
                "server": live.server_name,
                "sessions": live.counters["sessions"],
                "uptime": live.uptime,
            },
        )

    def _authenticate(self, request: h11.Request, host: str) -> Response | None:
        """None when the request may proceed; else the 429 (throttled) or 401 answer."""
        if self._credentials is None:
            return None
        throttle = self.throttle
        wait = throttle.retry_after(host)
        if wait > 0:
            response = problem(
                429, "too_many_attempts", f"too many failed logins: retry in {wait:.1f}s"
            )
            response.headers.append(("retry-after", str(max(1, round(wait)))))
            return response
        if not self._authorized(request):
            if _has_credentials(request):  # a guess; a bare request is only asking how
                throttle.failed(host)
            return Response(
                401,
                b"",
                [("www-authenticate", 'Basic realm="pushgrid monitoring", charset="UTF-8"')],
            )
        throttle.succeeded(host)
        return None

    def _authorized(self, request: h11.Request) -> bool:
        if self._credentials is None:
            return True
        for name, value in request.headers:
            if name == b"authorization" and value[:6].lower() == b"basic ":
                try:
                    given = base64.b64decode(value[6:].strip(), validate=True)
                except (binascii.Error, ValueError):
                    return False
                return hmac.compare_digest(given, self._credentials)
        return False

    async def _jolokia(self, method: str, raw_target: str, body: bytes) -> Response:
        url = urlsplit(raw_target)
        rest = url.path[len(JOLOKIA_BASE) :] or "/version"  # raw: the agent decodes it
        if method not in ("GET", "HEAD", "POST"):
            return problem(405, "method_not_allowed", "Jolokia accepts GET and POST")
        # The agent is synchronous and its live getters hop back onto the loop (LoopBridge), so
        # it runs on a worker thread; read-model getters read the immutable value directly.
        loop = asyncio.get_running_loop()
        status, payload = await loop.run_in_executor(
            self._executor, self.jolokia.handle_http, method, rest, url.query, body
        )
        content = content_type(dict(parse_qsl(url.query)))
        return Response(status, b"" if method == "HEAD" else payload, [("content-type", content)])

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
