"""Fixtures of the integration suite: real server processes and clients that are always cleaned up.

- ``server_factory(**settings)``: start a ``pushgrid server`` with those pushgrid.conf keys
  (``MaxCachedMessagesPerSubject=10``, ...) on a free 127.0.0.1 port; returns a
  :class:`~pgtest.ServerProcess` (host, port, url, ws_url, proc, restart(), stop(sig), ...).
  Every process it started is killed at teardown, and a server that logged a traceback fails
  the test.
- ``server``: one default-settings server shared by the whole session (use ``subject()`` for
  subjects no other test touches).
- ``connect``: open a :class:`~pgtest.WsClient`, closed at teardown.
- ``browser``: headless Chromium (:class:`~browser.Browser`), one per module, reset to a blank
  tab for each test.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from natsserver import nats_url as nats_url  # the session fixture, shared

from .browser import Browser, missing
from .pgtest import ServerProcess, TcpProxy, WsClient

TRACEBACK = "Traceback (most recent call last)"


def _check_log(server: ServerProcess) -> None:
    log = server.log()
    if TRACEBACK in log:
        start = log.index(TRACEBACK)
        pytest.fail(f"the server logged an exception:\n{log[max(0, start - 300) : start + 3000]}")


def _make_factory(
    tmp: pytest.TempPathFactory, started: list[ServerProcess]
) -> Callable[..., ServerProcess]:
    def factory(_env: dict[str, str] | None = None, **settings: Any) -> ServerProcess:
        """Start a server with these pushgrid.conf keys (and ``_env`` extra variables)."""
        srv = ServerProcess(tmp.mktemp("pushgrid"), settings, env=_env)
        started.append(srv)
        return srv.start()

    return factory


@pytest.fixture
def server_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []
    yield _make_factory(tmp_path_factory, started)
    for srv in started:
        srv.kill()
    for srv in started:
        _check_log(srv)


@pytest.fixture(scope="module")
def module_server_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ServerProcess]]:
    """Like ``server_factory``, for servers shared by the tests of one module."""
    started: list[ServerProcess] = []
    yield _make_factory(tmp_path_factory, started)
    for srv in started:
        srv.kill()
    for srv in started:
        _check_log(srv)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A default-settings server shared by the session (tests use unique subjects on it)."""
    started: list[ServerProcess] = []
    srv = _make_factory(tmp_path_factory, started)(ServerName="it-shared")
    yield srv
    srv.kill()
    _check_log(srv)


_counter = itertools.count(1)
_RUN = uuid.uuid4().hex[:6]


@pytest.fixture
def subject(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``subject("IBM")`` -> a subject no other test uses, e.g. ``/it/ab12cd/7/test_x/IBM``."""
    name = request.node.name.split("[")[0][:40]

    def make(leaf: str = "s") -> str:
        return f"/it/{_RUN}/{next(_counter)}/{name}/{leaf}"

    return make


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Awaitable[WsClient]]]:
    clients: list[WsClient] = []

    async def open_client(target: Any, token: str | None = None) -> WsClient:
        client = await WsClient.connect(target, token)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.close()


@pytest.fixture
async def proxy_factory() -> AsyncIterator[Callable[[ServerProcess], Awaitable[TcpProxy]]]:
    proxies: list[TcpProxy] = []

    async def make(target: ServerProcess) -> TcpProxy:
        proxy = await TcpProxy(target.host, target.port).start()
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        await proxy.close()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """One headless Chromium per module (starting one costs about a second); tests take it
    through ``browser``."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    page = Browser()
    yield page
    page.quit()


@pytest.fixture
def browser(chromium: Browser) -> Browser:
    """The module's Chromium, reset to a blank tab (``Browser.reset``) for this test."""
    chromium.reset()
    return chromium


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        # 90 s unless the module asks for more (a browser module that starts its own stack)
        if here in Path(str(item.fspath)).parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(90))
