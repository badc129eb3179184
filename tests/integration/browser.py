"""Helpers of the browser tests: headless Chromium (selenium), a threaded TCP relay, publishing.

The tests drive the demo page (``/demo``, client/js/demo.html) served by a real server, and read
what the page saw from ``window.pgDemo`` (messages, status events, publish results) and the DOM.
Chromium and chromedriver come from Debian (``apt-get install chromium chromium-driver``);
selenium from PyPI. Every wait is bounded (WebDriverWait).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx

from .pgtest import DEFAULT_TIMEOUT, TcpProxy

CHROMIUM = os.environ.get("PUSHGRID_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PUSHGRID_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--window-size=1200,900",
]
# page-level waits: a reconnect with the demo's fast backoff takes well under 20 s on a quiet
# machine; a bound, not a measurement (two test suites at load 20-30 made 20 s too short)
WAIT = 60.0

_T = TypeVar("_T")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return (
                f"{path} not found: install the Debian packages with "
                "'apt-get install chromium chromium-driver' to run the browser tests"
            )
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install selenium to run the browser tests"
    return None


class Browser:
    """One headless Chromium with a fresh profile, driven by chromedriver."""

    def __init__(self) -> None:
        os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="pushgrid-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_script_timeout(DEFAULT_TIMEOUT)
        self.driver.set_page_load_timeout(DEFAULT_TIMEOUT * 2)
        self.log: list[dict[str, Any]] = []
        self.scripts: list[str] = []  # identifiers of the before_load scripts

    def reset(self) -> None:
        """A blank tab for the next test, as a new profile would give it: the page is left (its
        WebSocket / EventSource connections close), the before_load scripts are removed, cache
        and cookies cleared, and the console entries of earlier tests dropped."""
        self.driver.get("about:blank")
        for identifier in self.scripts:
            self.driver.execute_cdp_cmd(
                "Page.removeScriptToEvaluateOnNewDocument", {"identifier": identifier}
            )
        self.scripts.clear()
        self.driver.execute_cdp_cmd("Network.clearBrowserCache", {})
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.driver.get_log("browser")  # chromedriver hands each entry out once: drained
        self.log.clear()

    # pages
    def before_load(self, script: str) -> None:
        """Run ``script`` in every document before its own scripts (e.g. delete WebSocket)."""
        added = self.driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": script}
        )
        self.scripts.append(added["identifier"])

    def open_demo(self, base_url: str, **params: Any) -> None:
        """Load ``base_url``/demo with query ``params`` (lists repeat) and wait for the client."""
        pairs = [
            (key, item)
            for key, value in params.items()
            for item in (value if isinstance(value, list | tuple) else [value])
        ]
        query = urlencode(pairs)
        self.driver.get(f"{base_url}/demo" + (f"?{query}" if query else ""))
        self.wait_js("return window.pgDemo && window.pgDemo.client !== null", "demo client")

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def wait(self, condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        """Poll ``condition`` until it returns something truthy (bounded); return it."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(
                lambda _driver: condition()
            )
        except TimeoutException:
            raise AssertionError(
                f"{what}: not reached within {timeout}s; statuses seen: {self.statuses()[-12:]}"
            ) from None

    def wait_js(self, script: str, what: str, timeout: float = WAIT) -> Any:
        return self.wait(lambda: self.js(script), what, timeout)

    # what the page saw
    def messages(self, subject: str | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.js("return window.pgDemo ? window.pgDemo.messages : []")
        return [m for m in found if subject is None or m["subject"] == subject]

    def statuses(
        self, status: str | None = None, subject: str | None = None
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.js("return window.pgDemo ? window.pgDemo.statuses : []")
        return [
            e
            for e in found
            if (status is None or e["status"] == status)
            and (subject is None or e.get("subject") == subject)
        ]

    def wait_messages(
        self, subject: str, count: int, timeout: float = WAIT
    ) -> list[dict[str, Any]]:
        """Wait until the page holds at least ``count`` messages of ``subject``; return them all."""
        return self.wait(
            lambda: found if len(found := self.messages(subject)) >= count else None,
            f"{count} messages of {subject} (have {len(self.messages(subject))})",
            timeout,
        )

    def wait_status(
        self,
        status: str,
        subject: str | None = None,
        detail: str | None = None,
        count: int = 1,
        timeout: float = WAIT,
    ) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]] | None:
            events = [
                e
                for e in self.statuses(status, subject)
                if detail is None or e.get("detail") == detail
            ]
            return events if len(events) >= count else None

        return self.wait(
            found, f"{count} x status {status} {subject or ''} {detail or ''}", timeout
        )

    def row(self, subject: str) -> dict[str, str] | None:
        """The cells of the demo table row of ``subject`` (class name -> text), or None."""
        cells: dict[str, str] | None = self.js(
            """
            const tr = Array.from(document.querySelectorAll("#messages tbody tr"))
                .find((row) => row.dataset.subject === arguments[0]);
            if (!tr) return null;
            const cells = {};
            for (const td of tr.querySelectorAll("td[class]")) cells[td.className] = td.innerText;
            return cells;
            """,
            subject,
        )
        return cells

    def client(self, expression: str) -> Any:
        """The value of ``expression`` on the page's client, e.g. ``"transport"``."""
        return self.js(f"return window.pgDemo.client.{expression}")

    def console(self) -> list[dict[str, Any]]:
        """Every browser console entry so far (chromedriver hands each entry out only once)."""
        self.log.extend(self.driver.get_log("browser"))
        return list(self.log)

    def console_errors(self, include_network: bool = False) -> list[dict[str, Any]]:
        """SEVERE console entries: script errors and console.error calls, and with
        ``include_network`` also the browser's own network failure reports (refused connections
        during a restart are expected there)."""
        return [
            e
            for e in self.console()
            if e.get("level") == "SEVERE" and (include_network or e.get("source") != "network")
        ]

    def quit(self) -> None:
        with contextlib.suppress(Exception):
            self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)


# --- a TCP relay usable from synchronous tests ---------------------------------------------------


class ThreadedProxy:
    """:class:`~pgtest.TcpProxy` on an event loop of its own thread, for synchronous tests.

    ``block_websocket``: close every connection whose request is a WebSocket upgrade (a proxy
    that lets plain HTTP through but not WebSocket), to exercise the client's SSE fallback.
    """

    def __init__(self, host: str, port: int, block_websocket: bool = False) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.proxy = TcpProxy(host, port)
        if block_websocket:
            self.proxy._handle = self._filtering(self.proxy._handle)  # type: ignore[method-assign]
        self.blocked = 0
        self._call(self.proxy.start())

    def _call(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(DEFAULT_TIMEOUT)

    def _filtering(self, handle: Any) -> Any:
        async def filtered(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await asyncio.wait_for(reader.read(65536), DEFAULT_TIMEOUT)
            except (OSError, TimeoutError):
                writer.transport.abort()
                return
            if b"upgrade: websocket" in head.lower():
                self.blocked += 1
                writer.transport.abort()
                return
            reader._buffer[:0] = head  # type: ignore[attr-defined]  # put the request back
            await handle(reader, writer)

        return filtered

    @property
    def port(self) -> int:
        return self.proxy.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.proxy.port}"

    @property
    def accepted(self) -> int:
        return self.proxy.accepted

    def set_accepting(self, accepting: bool) -> None:
        self.loop.call_soon_threadsafe(setattr, self.proxy, "accepting", accepting)

    def drop_all(self) -> int:
        async def drop() -> int:
            return self.proxy.drop_all()

        return self._call(drop())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self.proxy.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


# --- the server side -----------------------------------------------------------------------------


def publish(
    base_url: str,
    subject: str,
    content: str,
    fields: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """POST /publish and return the answer, which must be ok."""
    body = {"subject": subject, "content": content, "fields": fields or {}, **extra}
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        response = http.post(f"{base_url}/publish", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    assert answer["result"] == "ok", answer
    return answer


def jolokia_disconnect(monitor_url: str, session: str) -> dict[str, Any]:
    """Close one session as an operator would (close code 4003)."""
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        request = {
            "type": "exec",
            "mbean": "pushgrid:type=Sessions",
            "operation": "disconnect",
            "arguments": [session],
        }
        response = http.post(f"{monitor_url}/jolokia", json=request)
    answer: dict[str, Any] = response.json()
    assert answer.get("status") == 200, answer
    return answer


#: records what the server sent, before the client reads it (every WebSocket / EventSource)
WIRE_RECORDER = """
window.pgWire = [];
const record = (source) => source.addEventListener("message", (e) => {
  if (typeof e.data === "string") window.pgWire.push(e.data);
});
const ES = window.EventSource, WS = window.WebSocket;
window.EventSource = class extends ES { constructor(...a) { super(...a); record(this); } };
window.WebSocket = class extends WS { constructor(...a) { super(...a); record(this); } };
"""


def wire_updates(browser: Browser, subject: str) -> list[dict[str, Any]]:
    """The live update frames of ``subject`` as they came over the wire (WIRE_RECORDER)."""
    frames = []
    for data in browser.js("return window.pgWire"):
        parsed = json.loads(data)
        frames += parsed if isinstance(parsed, list) else [parsed]
    return [
        f
        for f in frames
        if f.get("type") == "message" and f["subject"] == subject and f["kind"] == "update"
    ]
