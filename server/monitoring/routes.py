"""The monitoring port (MonitorHTTP.Listen): /jolokia, /stats, /metrics, /health.

Optional HTTP Basic authentication (MonitorUsername / MonitorPassword): a request without the
right credentials gets 401 and nothing else. After AuthFailuresBeforeBackoff failures from one
address, its next attempts get 429 (Retry-After) without being checked, for a back-off that
doubles per failure up to AuthBackoffMax seconds (brute-force protection, docs/security.md).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, parse_qsl, urlsplit

import h11
from prometheus_client import CollectorRegistry

from ..core.throttle import AuthThrottle, host_of
from ..transport.http import Response, json_response, problem
from .cluster_view import status_dict
from .jolokia import JolokiaAgent, content_type
from .ports import MonitoredNode
from .prometheus_exporter import CONTENT_TYPE, exposition
from .stats_page import stats_document, stats_text

JOLOKIA_BASE = "/jolokia"


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
    ) -> None:
        self.node = node
        self.jolokia = jolokia
        self.prometheus = prometheus
        self.throttle = throttle
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jolokia")
        self._credentials: bytes | None = None
        if credentials is not None:
            self._credentials = f"{credentials[0]}:{credentials[1]}".encode()

    async def __call__(self, request: h11.Request, body: bytes, remote: str) -> Response:
        refusal = self._authenticate(request, host_of(remote))
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
