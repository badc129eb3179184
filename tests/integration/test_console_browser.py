"""The ops console in real headless Chromium, over a real admin API, real servers and a real store.

One stack for the module: two ``pushgrid server`` processes, a SQLite store holding pipeline
results (written with the store's own writer, no Spark), the admin API (``create_app``) with the
console mounted at ``/console`` (``mount_console``) under uvicorn on a free port, and an admin
token made with the admin API's token service. The browser is driven through
``dash.testing.browser.Browser`` (dash[testing]) on the repository's Selenium, with Debian's
chromium and chromedriver. Each page test takes a full-page screenshot when someone will look
at it: with ``CONSOLE_SCREENSHOTS=1`` they are saved to ``docs/img/console-<page>.png`` (the
documentation's), with ``PUSHGRID_SHOTS`` set to a temporary directory (the modules that copy
them there), else none is taken.

Skipped only when Chromium, chromedriver, selenium or the dash testing extras are missing.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.keys import Keys
from sqlalchemy import delete, update

from .browser import CHROMEDRIVER, CHROMIUM, FLAGS, missing
from .pgtest import DEFAULT_TIMEOUT, ServerProcess, free_port, serve_in_thread, window_coverage

REPO = Path(__file__).resolve().parents[2]
# Screenshots go to docs/img/ with CONSOLE_SCREENSHOTS=1 (to refresh the documentation), else to
# a temporary directory (the work tree stays clean). Not a PUSHGRID_* name: those are pushgrid
# settings, and the statistics run refuses unknown ones.
DOCS_SHOTS = REPO / "docs" / "img"
WIDTH, HEIGHT = 1440, 900
# page-level waits: bounds for a page that never gets there, not measurements (a wait returns
# as soon as its condition holds); two test suites on the 2 cores (load 20-30) made 20 s too short
WAIT = 60.0
NODES = ("console-1", "console-2")


def shots_wanted() -> bool:
    """Whether anyone will look at the screenshots: docs/img's (``CONSOLE_SCREENSHOTS=1``) or a
    reviewer's folder (``PUSHGRID_SHOTS``, where the browser modules copy theirs). Without either
    they went to a temporary directory nobody opens, and a full-page one costs 2-4 s (the window
    grown, 1.5 s to lay out again): two minutes of every run (docs/adr/066). A screenshot checks
    nothing; the checks around it run either way."""
    docs = os.environ.get("CONSOLE_SCREENSHOTS", "") not in ("", "0")
    return docs or bool(os.environ.get("PUSHGRID_SHOTS"))


def _skip_reason() -> str | None:
    reason = missing()
    if reason is not None:
        return reason
    try:
        import dash.testing.browser  # noqa: F401
        import dash_testing_stub  # noqa: F401
    except ImportError as exc:
        return f"dash testing extras missing ({exc}): pip install dash percy-python-selenium ..."
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


# --- the stack ------------------------------------------------------------------------------


@dataclass
class Stack:
    servers: list[ServerProcess]
    api_url: str
    token: str
    db_url: str
    as_of: int
    old_as_of: int
    runs: dict[str, int]

    @property
    def console_url(self) -> str:
        return f"{self.api_url}/console/"

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
            return http.request(
                method,
                f"{self.api_url}/api/v1{path}",
                headers={"Authorization": f"Bearer {self.token}"},
                **kwargs,
            )


def _seed(db_url: str) -> tuple[int, int, dict[str, int]]:
    """Pipeline results as ``pushgrid stats run`` writes them (the store's writer, no Spark):

    - run ``old``: statistics of ``node:old-node`` as of two hours ago, written three hours ago
      (so the admin API flags them stale);
    - run ``failed``: a run that failed, with its error;
    - run ``main``: the cluster and both nodes as of now, with 24 hourly trend points.
    """
    from pushgrid.metrics.sqlstore import finish_run, make_session_factory, start_run, write_results
    from pushgrid.metrics.sqlstore.models import TrendPoint, WindowStat, utc_now
    from pushgrid.spark_stats.synthetic_results import synthetic_result

    now = int(time.time())
    as_of = now // 60 * 60
    old_as_of = as_of - 7200
    factory = make_session_factory(db_url)
    runs: dict[str, int] = {}
    three_hours_ago = utc_now() - timedelta(hours=3)
    an_hour_ago = utc_now() - timedelta(hours=1)
    with factory() as session:
        old = start_run(session, as_of=old_as_of, started_at=three_hours_ago)
        result = synthetic_result(old_as_of, nodes=("old-node",), trend_points=1, offset=0.5)
        write_results(session, old.id, result)
        finish_run(
            session,
            old.id,
            status="succeeded",
            as_of=old_as_of,
            input_rows=7200,
            output_rows=len(result.window_stats),
            stages=result.stages,
            finished_at=three_hours_ago + timedelta(seconds=21.5),
        )
        session.execute(
            delete(WindowStat).where(WindowStat.run_id == old.id, WindowStat.scope == "cluster")
        )
        session.execute(
            delete(TrendPoint).where(TrendPoint.run_id == old.id, TrendPoint.scope == "cluster")
        )
        session.execute(
            update(WindowStat)
            .where(WindowStat.run_id == old.id)
            .values(computed_at=three_hours_ago)
        )
        session.commit()
        runs["old"] = old.id

        failed = start_run(session, as_of=as_of - 300, started_at=an_hour_ago)
        finish_run(
            session,
            failed.id,
            status="failed",
            error="Py4JJavaError: An error occurred while calling o123.parquet\n  ...",
            finished_at=an_hour_ago + timedelta(seconds=8.25),
        )
        runs["failed"] = failed.id

        main = start_run(session, as_of=as_of, started_at=utc_now() - timedelta(seconds=40))
        result = synthetic_result(as_of, nodes=NODES, trend_points=24, trend_step=3600)
        _daily_wave(result.trend_points)
        write_results(session, main.id, result)
        finish_run(
            session,
            main.id,
            status="succeeded",
            as_of=as_of,
            input_rows=172_800,
            output_rows=len(result.window_stats) + len(result.trend_points),
            stages=result.stages,
        )
        runs["main"] = main.id
    factory.kw["bind"].dispose()
    return as_of, old_as_of, runs


def _daily_wave(frame: Any) -> None:
    """Give the synthetic trend series a daily rhythm (as traffic has), in place."""
    import numpy as np

    phase = np.sin(2 * np.pi * (frame["as_of"] % 86400) / 86400)
    wave = 1.0 + 0.4 * phase + 0.05 * np.cos(frame["as_of"] / 7000)
    frame["avg"] = frame["avg"] * wave
    frame["max"] = frame["max"] * wave * (1.05 + 0.1 * np.abs(phase))
    frame["stddev"] = frame["stddev"] * wave


def _admin_token(db_url: str) -> str:
    from pushgrid.admin_api.security import Role
    from pushgrid.admin_api.services.tokens import TokenService
    from pushgrid.metrics.sqlstore import session_scope

    with session_scope(db_url) as session:
        return TokenService(session).create("console-test", Role.ADMIN, "test").token


@contextlib.contextmanager
def admin_console(servers: list[ServerProcess], work: Path, **options: Any) -> Iterator[Any]:
    """The admin API with the console mounted, under uvicorn, over ``servers`` (named by their
    ``ServerName``), on a seeded store in ``work``: yields ``(Stack, uvicorn.Server)``.
    ``options``: more settings (load_settings keywords)."""
    from pushgrid.admin_api.main import create_app
    from pushgrid.admin_api.services.jobs import JobRunner
    from pushgrid.config import load_settings
    from pushgrid.console.mount import mount_console
    from pushgrid.metrics.sqlstore import make_session_factory, upgrade

    db_url = f"sqlite:///{work / 'pushgrid.db'}"
    upgrade(db_url)
    as_of, old_as_of, runs = _seed(db_url)
    token = _admin_token(db_url)

    port = free_port()
    settings = load_settings(
        None,
        environ={},
        admin_listen=f"127.0.0.1:{port}",
        admin_members=[f"{srv.settings['ServerName']}={srv.monitor_url}" for srv in servers],
        database=db_url,
        metrics_archive=str(servers[0].workdir / "data" / "archive"),
        stats_warehouse=str(work / "warehouse"),
        spark_master="local[1]",
        **options,
    )
    factory = make_session_factory(db_url)
    app = create_app(
        settings,
        session_factory=factory,
        job_runner=JobRunner(settings.stats, settings.metrics_archive, log_path=work / "stats.log"),
    )
    mount_console(app, settings.admin)
    with serve_in_thread(app, port, WAIT) as server:
        yield (
            Stack(servers, f"http://127.0.0.1:{port}", token, db_url, as_of, old_as_of, runs),
            server,
        )
    factory.kw["bind"].dispose()


@pytest.fixture(scope="module")
def stack(
    module_server_factory: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    presence = {"Occupancy.PresencePatterns": "/Chat/*"}  # the presence panel's test
    servers = [module_server_factory(ServerName=name, **presence) for name in NODES]
    with admin_console(servers, tmp_path_factory.mktemp("console")) as (built, _server):
        yield built


# --- the browser ----------------------------------------------------------------------------

#: Console.held: wrap fetch so that the callbacks of an output wait before they are sent
HOLD_REQUESTS = """
const [output, wait] = arguments;
if (!window.__unheldFetch) { window.__unheldFetch = window.fetch; }
const send = window.__unheldFetch;
window.fetch = function (input, init) {
    let outputs = "";
    try { outputs = JSON.parse((init && init.body) || "{}").output || ""; } catch (e) {}
    if (outputs.indexOf(output) === -1) { return send(input, init); }
    return new Promise(function (r) { setTimeout(r, wait); }).then(function () {
        return send(input, init);
    });
};
"""


class Console:
    """The console in one headless Chromium tab (``dash.testing.browser.Browser``)."""

    def __init__(self, stack: Stack, shots: Path) -> None:
        os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: never download
        from dash.testing.browser import Browser
        from selenium.webdriver.chrome.options import Options

        options = Options()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            if not flag.startswith("--window-size"):
                options.add_argument(flag)
        options.add_argument(f"--window-size={WIDTH},{HEIGHT}")
        options.add_argument("--hide-scrollbars")
        os.environ["PATH"] = f"{Path(CHROMEDRIVER).parent}:{os.environ.get('PATH', '')}"
        self.stack = stack
        self.shots = shots
        self.br = Browser(
            "chrome", headless=False, options=[options], percy_run=False, wait_timeout=int(WAIT)
        )
        self.driver = self.br.driver

    def close(self) -> None:
        self.br.__exit__(None, None, None)

    # navigation
    def open(self) -> None:
        """Load the console (the login page when the tab has no token)."""
        self.br.server_url = self.stack.console_url  # loads it and waits for Dash to render

    def sign_in(self, token: str) -> None:
        self.type("#login-token", token)
        self.click("#login-button")

    def ensure_signed_in(self) -> None:
        if not self.driver.current_url.startswith(self.stack.console_url):
            self.open()
        if not self.js("return !!document.getElementById('nav-group-live')"):
            self.wait(
                lambda: self.js("return !!document.getElementById('login-token')"), "the login page"
            )
            self.sign_in(self.stack.token)
        self.br.wait_for_element("#nav-group-live")

    def goto(self, page: str, ready: str) -> None:
        """Follow the navigation to ``page`` (its group's tab first, when the page's link is
        not in the current group's row) and wait for the ``ready`` selector."""
        from pushgrid.console.pages import GROUPS

        self.ensure_signed_in()
        # the pages' row scrolls with the page, under the sticky header: back to the top first,
        # as a person would (a click at the header's height landed on the brand)
        self.js("window.scrollTo(0, 0)")
        link = f"nav-{page}"
        if not self.js("return !!document.getElementById(arguments[0])", link):
            for group in GROUPS:
                tab = f"nav-group-{group.lower()}"
                self.click(f"#{tab}")

                def shown(tab: str = tab) -> str | None:
                    """'yes' / 'no' (the page's link is in the group) once the group is open."""
                    answer: str | None = self.js(
                        "const a = document.querySelector('#nav .nav-link.active');"
                        "return a && a.id === arguments[0]"
                        " ? (document.getElementById(arguments[1]) ? 'yes' : 'no') : null",
                        tab,
                        link,
                    )
                    return answer

                found = self.wait(shown, f"the {group} group")
                if found == "yes":
                    break
        self.click(f"#{link}")
        self.br.wait_for_element(ready)

    def click(self, selector: str) -> None:
        """Click the element ``selector`` names (found again if Dash re-rendered it)."""
        self._on_element(selector, lambda element: element.click())

    def type(self, selector: str, text: str) -> None:
        """Type ``text`` into the empty field ``selector`` names (found again if re-rendered)."""

        def typed(element: Any) -> None:
            self.br.clear_input(element)
            element.send_keys(text)

        self._on_element(selector, typed)

    def _on_element(self, selector: str, action: Callable[[Any], None]) -> None:
        """``action`` on the element ``selector`` names, found again when Dash re-rendered it
        between the find and the action: a StaleElementReferenceException is the page updating,
        not a bug."""
        from selenium.common.exceptions import StaleElementReferenceException

        deadline = time.monotonic() + WAIT
        while True:
            try:
                action(self.br.wait_for_element(selector))
                return
            except StaleElementReferenceException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def select(self, dropdown: str, value: str) -> None:
        """Choose ``value`` in a dcc.Dropdown: open it, click the option (Dash 4 markup)."""
        self.click(f"#{dropdown}")
        option = f".dash-dropdown-options input[value='{value}']"
        self.wait(
            lambda: self.js("return !!document.querySelector(arguments[0])", option),
            f"the option {value} of {dropdown}",
        )
        self.js("document.querySelector(arguments[0]).closest('label').click()", option)
        self.wait(
            lambda: (
                value in self.js("return document.getElementById(arguments[0]).innerText", dropdown)
                or self.js("return !document.querySelector('.dash-dropdown-options')")
            ),
            f"{dropdown} closed",
        )

    # reading
    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def diagnosis(self) -> str:
        """What a wait that timed out should say: the components Dash is still updating, and
        how long the admin API takes to answer now."""
        loading = self.js(
            "return Array.from(document.querySelectorAll('[data-dash-is-loading=true]'))"
            ".map(e => e.id || e.className).slice(0, 10)"
        )
        started = time.monotonic()
        try:
            status: object = self.stack.api("GET", "/members").status_code
        except httpx.HTTPError as exc:
            status = repr(exc)
        took = time.monotonic() - started
        names = sorted(t.name for t in threading.enumerate())
        return (
            f"still loading: {loading}; admin API answered {status} in {took:.2f} s; "
            f"{len(names)} threads in the test process: {names[:40]}"
        )

    @contextlib.contextmanager
    def held(self, output: str, ms: int) -> Iterator[None]:
        """The browser's callback requests whose outputs name ``output`` leave ``ms`` late (the
        page's other requests go at once): a loaded admin API, made deterministic."""
        self.js(HOLD_REQUESTS, output, ms)
        try:
            yield
        finally:
            self.js("if (window.__unheldFetch) { window.fetch = window.__unheldFetch; }")

    def wait(self, condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                charts = {
                    t["name"]: (
                        len(t["x"]),
                        t["x"][:1],
                        t["x"][-1:],
                        [(x, y) for x, y in zip(t["x"], t["y"], strict=False) if y],
                    )
                    for t in self.graph("overview-graph-incoming_messages_per_second")
                }
                raise AssertionError(
                    f"{what}: not reached within {timeout}s (incoming chart: {charts}, "
                    f"alerts: {self.text('.alerts')!r}; {self.diagnosis()})"
                )
            time.sleep(0.1)

    def wait_js(self, script: str, what: str, *args: Any) -> Any:
        return self.wait(lambda: self.js(script, *args), what)

    def text(self, selector: str) -> str:
        found = self.js(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null",
            selector,
        )
        return found or ""

    def wait_text(self, selector: str, needle: str, timeout: float = WAIT) -> str:
        def found() -> str | None:
            shown = self.text(selector)
            return shown if needle in shown else None

        return self.wait(
            found,
            f"{selector} containing {needle!r} (it shows {self.text(selector)!r})",
            timeout,
        )

    def graph(self, element_id: str) -> list[dict[str, Any]]:
        """The traces (name, x, y) plotly is drawing in a dcc.Graph."""
        traces: list[dict[str, Any]] | None = self.js(
            """
            const root = document.getElementById(arguments[0]);
            const plot = root && root.querySelector('.js-plotly-plot');
            if (!plot || !plot.data) return null;
            return plot.data.map(t => ({name: t.name, x: Array.from(t.x || []),
                                         y: Array.from(t.y || [])}));
            """,
            element_id,
        )
        return traces or []

    def errors(self) -> list[dict[str, Any]]:
        """SEVERE browser log entries (script errors, failed requests) since the last call."""
        return list(self.br.get_logs() or [])

    def assert_no_errors(self) -> None:
        errors = self.errors()
        assert not errors, f"browser console errors: {errors}"
        assert not self.js("return !!document.querySelector('div.dash-debug-alert')"), (
            "Dash reported an error"
        )

    def screenshot(self, page: str) -> Path:
        """A full-page screenshot ``console-<page>.png`` (in docs/img/ when asked), its path;
        none when nobody will look at it (:func:`shots_wanted`)."""
        path = self.shots / f"console-{page}.png"
        if not shots_wanted():
            return path
        self.shots.mkdir(parents=True, exist_ok=True)
        for _ in range(4):  # grow the window until the viewport holds the whole page
            inner, outer, content = self.js(
                "return [window.innerHeight, window.outerHeight,"
                " document.documentElement.scrollHeight]"
            )
            if content <= inner:
                break
            self.driver.set_window_size(WIDTH, min(content + (outer - inner) + 24, 4000))
            time.sleep(0.4)
        # let plotly and the page re-lay out for the new size (0.4 s: a shot of the Overview
        # sometimes painted the cards without their tables)
        time.sleep(1.5)
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(WIDTH, HEIGHT)
        return path


@pytest.fixture(scope="module")
def console(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    refresh = os.environ.get("CONSOLE_SCREENSHOTS", "") not in ("", "0")
    page = Console(stack, DOCS_SHOTS if refresh else tmp_path_factory.mktemp("screenshots"))
    yield page
    page.close()


# --- clients --------------------------------------------------------------------------------


class WsClient:
    """A blocking WebSocket client of one server: the frames it got and how it was closed."""

    def __init__(self, server: ServerProcess) -> None:
        from websockets.sync.client import connect

        self._exit = contextlib.ExitStack()
        self.ws = self._exit.enter_context(
            connect(server.ws_url, open_timeout=DEFAULT_TIMEOUT, proxy=None)
        )
        self.frames: list[dict[str, Any]] = []
        self.close_code: int | None = None
        self.closed = threading.Event()
        welcome = json.loads(self.ws.recv(timeout=DEFAULT_TIMEOUT))
        assert welcome["type"] == "welcome", welcome
        self.session: str = welcome["session"]
        self.remote = "{}:{}".format(*self.ws.socket.getsockname()[:2])
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            while True:
                self.frames.append(json.loads(self.ws.recv()))
        except ConnectionClosed as exc:
            self.close_code = exc.rcvd.code if exc.rcvd is not None else None
        finally:
            self.closed.set()

    def subscribe(self, *subjects: str, client_id: str | None = None) -> None:
        extra = {"client_id": client_id} if client_id else {}
        body = {"op": "subscribe", "id": 1, "subjects": [{"subject": s, **extra} for s in subjects]}
        self.ws.send(json.dumps(body))
        deadline = time.monotonic() + DEFAULT_TIMEOUT
        while not any(f.get("type") == "subscribed" for f in self.frames):
            assert time.monotonic() < deadline, f"not subscribed: {self.frames}"
            time.sleep(0.02)

    def messages(self, subject: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("type") == "message" and f["subject"] == subject]

    def close(self) -> None:
        self._exit.close()
        self.thread.join(5)


@pytest.fixture
def ws_clients() -> Iterator[Callable[[ServerProcess], WsClient]]:
    opened: list[WsClient] = []

    def make(server: ServerProcess) -> WsClient:
        client = WsClient(server)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


def publish(server: ServerProcess, subject: str, content: str, **fields: str) -> dict[str, Any]:
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        answer = http.post(
            f"{server.url}/publish", json={"subject": subject, "content": content, "fields": fields}
        )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def unique(name: str) -> str:
    return f"/console/{int(time.time() * 1000) % 10**9}/{name}"


# --- tests ----------------------------------------------------------------------------------


def test_login_refuses_a_bad_token_and_accepts_a_good_one(console: Console, stack: Stack) -> None:
    console.open()
    console.sign_in("pgt_" + "x" * 43)
    alert = console.wait_text("#login-alert", "Unauthorized")
    assert "401" in alert
    console.sign_in(stack.token)
    console.br.wait_for_element("#nav-overview")  # the Overview's group: Live
    assert console.wait_text("#user", "console-test") == "console-test · admin"
    console.assert_no_errors()


def test_overview_shows_health_and_live_charts_follow_new_traffic(
    console: Console, stack: Stack, ws_clients: Callable[[ServerProcess], WsClient]
) -> None:
    console.goto("overview", "#overview-health .health-card")
    console.wait(
        lambda: console.js("return document.querySelector('[data-health]').dataset.health") == "ok",
        "the cluster is healthy",
    )
    members = console.js(
        "return Array.from(document.querySelectorAll('.member-card'))"
        ".map(e => [e.dataset.member, e.dataset.up])"
    )
    assert members == [[name, "true"] for name in NODES]
    chart = "overview-graph-incoming_messages_per_second"
    console.wait(lambda: len(console.graph(chart)) == 3, "cluster + two member traces")
    assert [t["name"] for t in console.graph(chart)] == ["Cluster", *NODES]

    # traffic: one subscriber on each member, bursts of 12 messages to the first one until the
    # charts show them. The page draws one sampled second per tick, so a single short burst was
    # missed when the ticks slipped past its second under load (a one-off burst of 40 in 0.2 s at
    # 13:58:10 left no point of 13:58:09-11 on the chart): keep publishing until it is drawn.
    subject = unique("IBM")
    subscriber = ws_clients(stack.servers[0])
    subscriber.subscribe(subject)
    ws_clients(stack.servers[1])
    started = time.time()
    published = 0

    def peak(indicator: str, trace: int = 0) -> float:
        traces = console.graph(f"overview-graph-{indicator}")
        ys = [y for y in traces[trace]["y"] if y is not None] if traces else []
        return max(ys, default=0.0)

    def traffic_drawn(http: httpx.Client) -> bool:
        nonlocal published
        for _ in range(12):  # one burst: at least 10 of them land in one sampled second
            body = {"subject": subject, "content": str(published)}
            assert http.post("/publish", json=body).status_code == 200
            published += 1
        return (
            peak("incoming_messages_per_second") >= 10
            and peak("incoming_messages_per_second", 1) >= 10  # console-1's trace
            and peak("outgoing_messages_per_second") >= 10
        )

    with httpx.Client(base_url=stack.servers[0].url, trust_env=False, timeout=5.0) as http:
        console.wait(
            lambda: traffic_drawn(http),
            f"incoming (cluster, console-1) and outgoing messages charts after traffic since "
            f"{time.strftime('%H:%M:%S', time.gmtime(started))}",
        )
    assert len(subscriber.messages(subject)) <= published
    console.wait(lambda: peak("connected_users") >= 2, "connected users chart")
    assert peak("incoming_messages_per_second", 2) == 0  # nothing was published to console-2
    # the charts keep moving: a point a second
    before = len(console.graph(chart)[0]["x"])
    console.wait(lambda: len(console.graph(chart)[0]["x"]) >= before + 2, "two more points")
    # current value and the 1-minute statistics of the member that got the traffic
    max_1m = console.wait(
        lambda: console.text(
            "#overview-windows-incoming_messages_per_second "
            "td[data-member='console-1'][data-window='1m'][data-stat='max']"
        ),
        "console-1's 1m max",
    )
    assert float(max_1m) >= 10
    assert int(console.text("#overview-value-connected_users")) >= 2
    assert time.time() - started < 60
    console.screenshot("overview")
    console.assert_no_errors()


def test_overview_member_panel_shows_each_member_s_process(console: Console, stack: Stack) -> None:
    """Each member card carries its operator panel: the member's own numbers, read through the
    admin API (console/member_panel.py; docs/monitoring.md, "Member panel")."""
    console.goto("overview", "#overview-health .health-card")
    script = (
        "return Array.from(document.querySelectorAll('.member-card')).map(card => ["
        "card.dataset.member, Object.fromEntries(Array.from("
        "card.querySelectorAll('[data-panel]')).map(f => [f.dataset.panel, "
        "f.lastElementChild.textContent]))])"
    )
    panels = console.wait(
        lambda: (
            (found := dict(console.js(script)))
            and all(found.get(name, {}).get("cpu", "—") != "—" for name in NODES)
            and found
        ),
        "every member's panel with a CPU reading",
    )
    for name in NODES:
        panel = panels[name]
        assert panel["rss"].endswith("MiB"), panel
        files, limit = panel["open_files"].split(" (")[0].split(" / ")
        assert 0 < int(files.replace(",", "")) < int(limit.replace(",", "")), panel
        assert panel["loop_lag"].endswith(")"), panel
        assert panel["replica_lag"] == "no stream"  # standalone members
    console.screenshot("overview-member-panel")


# Every chart tick label and every text of a card must lie inside its box at 1440 px: a label
# cut by the plot's edge, or a value wider than its cell, is a clipped label (issue 21 item 9).
CLIPPED = """
const out = [];
for (const plot of document.querySelectorAll('.js-plotly-plot')) {
  const box = plot.getBoundingClientRect();
  if (box.width === 0) continue;
  const labels = '.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .legendtext';
  for (const t of plot.querySelectorAll(labels)) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5
        || r.bottom > box.bottom + 0.5)
      out.push(`${plot.parentElement.id || plot.id}: tick ${t.textContent}`);
  }
}
for (const e of document.querySelectorAll(
    '.big, .card-title, .card-unit, .fact span, .window-table td, .window-table th, '
    + '.stats-table td, .hot-card td, .segmented label, .member-card .muted')) {
  if (e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
    out.push(`overflowing text: ${e.className || e.tagName} "${e.innerText}"`);
}
return out;
"""
# what the one number formatter never writes: exponents, plotly's SI bytes, 2 decimals on
# integers
BAD_NUMBER = re.compile(r"\d[eE][+-]\d|\d\s?[kMG]B\b|\d\.00\b")


def test_overview_opens_on_history_with_a_range_picker_and_nothing_clipped(
    console: Console, stack: Stack
) -> None:
    """The Overview opens on the seconds the admin API kept before the page was opened (its
    history), the range picker redraws the charts for 5 min / 1 h / 24 h, and at 1440 px no
    tick label or value is clipped on the Overview, Statistics, Trends and Hot subjects."""
    assert console.driver.get_window_size()["width"] == WIDTH

    def kept() -> int:
        seconds = stack.api("GET", "/stats/history").json()["cluster"]["seconds"]
        return seconds[-1] - seconds[0] if seconds else 0

    console.wait(lambda: kept() >= 20, "20 s of history in the admin API", timeout=60)
    opened = time.time()
    console.goto("overview", "#overview-health .health-card")
    chart = "overview-graph-connections_per_second"

    def seconds() -> list[int]:
        xs = console.graph(chart)[0]["x"] if console.graph(chart) else []
        return [calendar.timegm(time.strptime(x, "%Y-%m-%d %H:%M:%S")) for x in xs]

    def span() -> float:
        drawn = seconds()
        return float(drawn[-1] - drawn[0]) if len(drawn) >= 2 else 0.0

    # the admin API has polled since the stack started: the first drawing holds that history
    # (points only ever extend forward, so a first point from before the page was opened is
    # the history, not the page's own ticks)
    first = console.wait(lambda: seconds()[:1], "the first drawing")[0]
    assert first <= opened - 15, f"the chart starts {opened - first:.0f} s before the page"
    assert (
        console.js("return document.querySelector('#overview-range input:checked').value") == "15m"
    )
    console.js("document.querySelector(`#overview-range input[value='5m']`).click()")
    console.wait(lambda: 0 < span() <= 300, "the 5 min range")
    console.js("document.querySelector(`#overview-range input[value='1h']`).click()")
    console.wait(lambda: span() >= 15, "the 1 h range")
    problems = console.js(CLIPPED)
    assert problems == [], problems
    texts = console.text("#page")
    assert not BAD_NUMBER.search(texts), BAD_NUMBER.search(texts)
    ticks = console.js(
        "return Array.from(document.querySelectorAll("
        "'#overview-graph-outgoing_bytes_per_second .ytick text')).map(t => t.textContent)"
    )
    assert ticks, "the byte chart has ticks"
    assert all(re.fullmatch(r"[0-9.]+ (B|KiB|MiB|GiB)", t) for t in ticks), ticks
    console.screenshot("overview-history")
    # beyond the history: the statistics store's cluster average and maximum
    console.js("document.querySelector(`#overview-range input[value='24h']`).click()")
    console.wait(
        lambda: [t["name"] for t in console.graph(chart)] == ["avg (1h)", "max (1h)"],
        "the 24 h range from the statistics store",
    )
    console.js("document.querySelector(`#overview-range input[value='15m']`).click()")
    console.wait(lambda: span() >= 15, "back to 15 min")
    for page, ready in (
        ("statistics", "#stats-table table"),
        ("trends", "#trends-graph .main-svg"),
        ("hot", "#hot-tables .hot-card"),
    ):
        console.goto(page, ready)
        time.sleep(1.0)  # a drawn chart, its ticks placed
        problems = console.js(CLIPPED)
        assert problems == [], (page, problems)
        texts = console.text("#page")
        assert not BAD_NUMBER.search(texts), (page, BAD_NUMBER.search(texts))
    console.assert_no_errors()


def test_a_member_down_is_shown_not_swallowed(console: Console, stack: Stack) -> None:
    answer = stack.api(
        "POST", "/members", json={"name": "ghost", "monitor_url": f"http://127.0.0.1:{free_port()}"}
    )
    assert answer.status_code == 201, answer.text
    try:
        console.goto("overview", "#overview-health .health-card")
        console.wait(
            lambda: console.js(
                "const e = document.querySelector('[data-member=ghost]');"
                "return e && e.dataset.up === 'false'"
            ),
            "the ghost member shown down",
        )
        assert console.js("return document.querySelector('[data-health]').dataset.health") == (
            "degraded"
        )
        alert = console.wait_text("#overview-alert", "ghost")
        assert "member ghost is down" in alert
        assert "unreachable" in console.text("[data-member=ghost] .member-error")
        # the other pages say so too
        console.goto("sessions", "#sessions-table table")
        assert "member ghost could not be read" in console.wait_text("#sessions-alert", "ghost")
        console.assert_no_errors()
    finally:
        assert stack.api("DELETE", "/members/ghost").status_code == 204


def test_statistics_table_shows_exactly_what_the_pipeline_wrote(
    console: Console, stack: Stack
) -> None:
    from pushgrid.console.format import exact
    from pushgrid.metrics.sqlstore import session_scope, window_stats

    with session_scope(stack.db_url) as session:
        written = [row.to_dict() for row in window_stats(session)]
    scopes = ["cluster", *(f"node:{n}" for n in NODES), "node:old-node"]
    assert sorted({r["scope"] for r in written}) == sorted(scopes)

    console.goto("statistics", "#stats-table table")
    options = console.js(
        "return Array.from(document.querySelectorAll('#stats-scope input')).map(e => e.value)"
    )
    assert options == scopes
    labels = console.js(
        "return Array.from(document.querySelectorAll('#stats-scope label')).map(e => e.innerText)"
    )
    assert [label.strip() for label in labels] == [
        "Cluster",
        *NODES,
        "old-node (not a member now)",  # its statistics are history, not a live member's
    ]
    for scope in scopes:
        console.js(
            "document.querySelector(`#stats-scope input[value='${arguments[0]}']`).click()", scope
        )
        expected = [r for r in written if r["scope"] == scope]
        as_of = str(expected[0]["as_of"])
        console.wait_js(
            "const t = document.querySelector('#stats-table table');"
            "return t && t.dataset.scope === arguments[0]",
            f"the table of {scope}",
            scope,
        )
        assert (
            console.js("return document.querySelector('#stats-asof [data-as-of]').dataset.asOf")
            == as_of
        )
        cells = console.js(
            "return Array.from(document.querySelectorAll('#stats-table td[data-stat]'))"
            ".map(c => [c.dataset.indicator, c.dataset.window, c.dataset.stat, c.dataset.value,"
            " c.innerText, c.dataset.coverage])"
        )
        shown = {(i, w, s): (v, text, cov) for i, w, s, v, text, cov in cells}
        assert len(shown) == 7 * 12 * 3
        for row in expected:
            share = window_coverage(row["window"], row["count"], row["as_of"])
            for stat in ("max", "avg", "stddev"):
                value, text, covered = shown[(row["indicator"], row["window"], stat)]
                assert value == repr(row[stat]), (scope, row, stat)
                assert float(covered) == pytest.approx(share, abs=1e-6)
                # a window with little data is marked (and only such a window)
                marked = share < 0.9 and row[stat] is not None
                assert text == exact(row[stat], row["indicator"]) + ("◔" if marked else ""), (
                    row,
                    stat,
                    text,
                )
        stale = console.js(
            "return document.querySelector('#stats-asof [data-stale]').dataset.stale"
        )
        banner = console.text("#stats-asof")
        if scope == "node:old-node":
            assert stale == "true"
            assert banner.startswith("▲ STALE")
        else:
            assert stale == "false"
            assert "STALE" not in banner
        if scope == "cluster":
            console.screenshot("statistics")
    assert "stale" in console.text("#stats-alert")  # one scope is stale: the page says so
    console.assert_no_errors()


def test_trends_chart_draws_the_pipeline_series(console: Console, stack: Stack) -> None:
    from pushgrid.metrics.sqlstore import session_scope, trend

    console.goto("trends", "#trends-graph .js-plotly-plot")
    console.select("trends-indicator", "incoming_messages_per_second")
    console.js("document.querySelector(`#trends-range input[value='all']`).click()")
    with session_scope(stack.db_url) as session:
        points = [
            p.to_dict() for p in trend(session, "cluster", "incoming_messages_per_second", "1h")
        ]
    assert len(points) == 24

    def drawn() -> list[float] | None:
        traces = {t["name"]: t for t in console.graph("trends-graph")}
        average = traces.get("average")
        return average["y"] if average else None

    expected = [p["avg"] for p in points]
    console.wait(lambda: drawn() == expected, f"the 24 trend points (drawn: {drawn()})")
    assert "Incoming messages/s" in console.text("#trends-indicator")
    maxima = {t["name"]: t for t in console.graph("trends-graph")}["max"]["y"]
    assert maxima == [p["max"] for p in points]
    assert (
        console.js("return document.querySelector('#trends-summary [data-points]').dataset.points")
        == "24"
    )
    console.screenshot("trends")
    # another scope: the series of console-2
    console.select("trends-scope", "node:console-2")
    with session_scope(stack.db_url) as session:
        node = [
            p.avg for p in trend(session, "node:console-2", "incoming_messages_per_second", "1h")
        ]
    console.wait(lambda: drawn() == node, "console-2's series")
    console.assert_no_errors()


def test_subject_snapshot_subscribers_and_a_test_publish_that_arrives(
    console: Console, stack: Stack, ws_clients: Callable[[ServerProcess], WsClient]
) -> None:
    subject = unique("NYSE/IBM")
    subscriber = ws_clients(stack.servers[0])
    subscriber.subscribe(subject)
    publish(stack.servers[0], subject, "193", volume="6.62M")

    console.goto("subjects", "#subject-input")
    console.type("#subject-input", subject)
    # each read of the subject answers later than the page's 1 s poll, as on a loaded machine:
    # the poll must wait for it (console/polling.py), not drop it and ask again forever
    with console.held("subject-snapshot", 2500):
        console.click("#subject-lookup")
        console.wait(
            lambda: (
                console.js(
                    "const e = document.querySelector('#subject-snapshot [data-content]');"
                    "return e && e.dataset.content"
                )
                == "193"
            ),
            "the snapshot",
        )
    assert "volume" in console.text("#subject-snapshot")
    assert "6.62M" in console.text("#subject-snapshot")
    console.wait(
        lambda: (
            console.js(
                "const e = document.querySelector('#subject-subscribers [data-count]');"
                "return e && e.dataset.count"
            )
            == "1"
        ),
        "one subscriber",
    )

    console.type("#subject-content", "194")
    console.type("#subject-fields", "bid=195\nask=196")
    console.click("#subject-publish")
    console.wait(
        lambda: (
            console.js(
                "const e = document.querySelector('#subject-arrival [data-arrived]');"
                "return e && e.dataset.arrived"
            )
            == "true"
        ),
        "the test message arrives",
    )
    assert "194" in console.text("#subject-snapshot")
    assert "194" in console.text("#subject-log-view")
    received = console.wait(lambda: subscriber.messages(subject)[-1:], "the subscriber's copy")
    assert received[0]["content"] == "194"
    assert received[0]["fields"] == {"bid": "195", "ask": "196"}
    console.screenshot("subjects")
    console.assert_no_errors()


def test_the_subjects_page_lists_the_presence_of_a_presence_subject(
    console: Console, stack: Stack, ws_clients: Callable[[ServerProcess], WsClient]
) -> None:
    """The Presence card (docs/occupancy.md): the client ids of a /Chat/... subject's sessions
    (a subject outside Occupancy.PresencePatterns: tests/unit/test_presence_table.py)."""
    subject = "/Chat/" + unique("lobby").strip("/").replace("/", "-")
    for client_id in ("ann", "bob@example.com"):
        ws_clients(stack.servers[0]).subscribe(subject, client_id=client_id)
    console.goto("subjects", "#subject-input")
    field = console.br.find_element("#subject-input")
    field.send_keys(Keys.CONTROL, "a")  # the page may still hold another test's subject
    field.send_keys(subject)
    console.click("#subject-lookup")
    console.wait(
        lambda: (
            console.js(
                "const e = document.querySelector('#subject-presence [data-listed]');"
                "return e && e.dataset.listed"
            )
            == "2"
        ),
        "two sessions listed",
    )
    text = console.text("#subject-presence")
    assert "ann" in text
    assert "bob@example.com" in text
    assert NODES[0] in text
    console.screenshot("subjects-presence")
    console.assert_no_errors()
    console.goto("overview", "#overview-health .health-card")  # leave the Subjects page empty


def test_a_session_disconnected_from_the_console_is_closed_at_the_server(
    console: Console, stack: Stack, ws_clients: Callable[[ServerProcess], WsClient]
) -> None:
    subject = unique("victim")
    victim = ws_clients(stack.servers[1])
    victim.subscribe(subject)
    bystander = ws_clients(stack.servers[1])
    bystander.subscribe(subject)
    for _ in range(3):
        ws_clients(stack.servers[0])  # more rows for the screenshot

    console.goto("sessions", "#sessions-table table")
    console.screenshot("sessions")
    search = console.br.find_element("#sessions-search")
    search.send_keys(subject)
    rows = console.wait(
        lambda: (
            found
            if len(
                found := console.js(
                    "return Array.from(document.querySelectorAll("
                    "'#sessions-table tr[data-session]')).map(r => r.dataset.session)"
                )
            )
            == 2
            else None
        ),
        "the two sessions on the subject",
    )
    assert sorted(rows) == sorted([victim.session, bystander.session])
    console.click(f"tr[data-session='{victim.session}'] button.danger")
    alert = console.wait(lambda: _alert(console), "the confirmation dialog")
    assert victim.session in alert.text
    assert "console-2" in alert.text
    alert.accept()

    assert victim.closed.wait(WAIT), "the victim's WebSocket was not closed"
    assert victim.close_code == 4003
    assert not bystander.closed.is_set()
    console.wait_text("#sessions-result", "disconnected")
    console.wait(
        lambda: (
            console.js(
                "return Array.from(document.querySelectorAll('#sessions-table tr[data-session]'))"
                ".map(r => r.dataset.session)"
            )
            == [bystander.session]
        ),
        "only the bystander is left",
    )
    console.assert_no_errors()


def _alert(console: Console) -> Any:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        return console.driver.switch_to.alert
    except NoAlertPresentException:
        return None


def test_jobs_page_lists_runs_and_starts_one(console: Console, stack: Stack) -> None:
    console.goto("jobs", "#jobs-table table")
    statuses = console.wait(
        lambda: console.js(
            "return Array.from(document.querySelectorAll('#jobs-table tr[data-run]'))"
            ".map(r => [r.dataset.run, r.dataset.status])"
        ),
        "the runs",
    )
    assert statuses == [
        [str(stack.runs["main"]), "succeeded"],
        [str(stack.runs["failed"]), "failed"],
        [str(stack.runs["old"]), "succeeded"],
    ]
    failed = console.text(f"#jobs-table tr[data-run='{stack.runs['failed']}']")
    assert "Py4JJavaError" in failed
    assert "8.25 s" in failed
    assert "21.5 s" in console.text(f"#jobs-table tr[data-run='{stack.runs['old']}']")
    bars = console.graph("jobs-graph")
    assert bars
    assert len(bars[0]["x"]) == 3
    console.screenshot("jobs")

    console.click("#jobs-start")
    console.wait(lambda: _alert(console), "the confirmation dialog").accept()
    notice = console.wait_text("#jobs-result", "started")
    new_id = int(notice.split("#")[1].split()[0])
    assert new_id > stack.runs["main"]
    console.wait(
        lambda: console.js(
            "return !!document.querySelector(`#jobs-table tr[data-run='${arguments[0]}']`)", new_id
        ),
        "the new run in the table",
    )
    console.assert_no_errors()


def test_audit_lists_the_admin_actions(console: Console, stack: Stack) -> None:
    console.goto("audit", "#audit-table table")
    actions = console.wait(
        lambda: (
            found
            if {"sessions.disconnect", "subjects.publish", "members.register", "jobs.trigger"}
            <= set(
                found := console.js(
                    "return Array.from(document.querySelectorAll('#audit-table tr[data-action]'))"
                    ".map(r => r.dataset.action)"
                )
            )
            else None
        ),
        "the disconnect, publish and member registration in the audit log",
    )
    assert actions[0] == "jobs.trigger"  # newest first
    assert "console-test" in console.text("#audit-table")
    console.screenshot("audit")
    console.assert_no_errors()
