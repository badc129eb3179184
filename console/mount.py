"""Serving the console: inside the admin API (``/console``) or on its own (WSGI)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

from pushgrid.config import AdminSettings, SignInSettings
from pushgrid.kernel.addresses import parse_address

from .app import SESSION_MARKER, create_dash_app
from .http_provider import HttpProvider
from .pages.login import SignInOptions
from .security import CSRF_HEADER, SESSION_COOKIE

if TYPE_CHECKING:
    from dash import Dash
    from fastapi import FastAPI

MOUNT_PATH: Final = "/console"


class ProviderCache:
    """One :class:`HttpProvider` (one pooled HTTP client) per token, the newest few kept.

    The console's callbacks run on WSGI worker threads; httpx clients are safe to share.
    """

    def __init__(self, api_url: str, size: int = 32, timeout: float = 10.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.size = size
        self.timeout = timeout
        self._lock = threading.Lock()
        self._providers: OrderedDict[str, HttpProvider] = OrderedDict()

    def __call__(self, token: str) -> HttpProvider:
        if token == SESSION_MARKER:
            return self.for_browser_session()
        with self._lock:
            provider = self._providers.get(token)
            if provider is not None:
                self._providers.move_to_end(token)
                return provider
            provider = HttpProvider(self.api_url, token, timeout=self.timeout)
            self._providers[token] = provider
            while len(self._providers) > self.size:
                _, old = self._providers.popitem(last=False)
                old.close()
            return provider

    def for_browser_session(self) -> HttpProvider:
        """The provider of the browser whose request this callback serves, signed in with a
        password or single sign-on (ADR 052): its session cookie and the CSRF token its Dash
        renderer sent (``X-CSRF-Token``, copied from the ``pushgrid_csrf`` cookie) go to the
        admin API, which checks both. Kept like tokens, by (cookie, CSRF token)."""
        from flask import request

        cookie = request.cookies.get(SESSION_COOKIE, "")
        csrf = request.headers.get(CSRF_HEADER, "")
        key = f"{SESSION_MARKER} {cookie} {csrf}"
        with self._lock:
            provider = self._providers.get(key)
            if provider is not None:
                self._providers.move_to_end(key)
                return provider
            headers = {"Cookie": f"{SESSION_COOKIE}={cookie}"} if cookie else {}
            if csrf:
                headers[CSRF_HEADER] = csrf
            provider = HttpProvider(self.api_url, "", timeout=self.timeout, headers=headers)
            self._providers[key] = provider
            while len(self._providers) > self.size:
                _, old = self._providers.popitem(last=False)
                old.close()
            return provider

    def close(self) -> None:
        with self._lock:
            for provider in self._providers.values():
                provider.close()
            self._providers.clear()


def api_url_of(settings: AdminSettings) -> str:
    """The admin API's own URL from ``Admin.Listen`` (a wildcard host means loopback)."""
    host, port = parse_address(settings.admin_listen)
    if host in ("", "0.0.0.0", "::", "*"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def sign_in_options(signin: SignInSettings | None) -> SignInOptions:
    """Served by the admin API, the console offers passwords (the session cookie shares the
    origin) and single sign-on when OIDC is configured."""
    if signin is None or not signin.oidc_enabled:
        return SignInOptions(password=True)
    return SignInOptions(
        password=True, sso_name=signin.oidc_display_name, sso_url="/api/v1/auth/oidc/start"
    )


def mount_console(
    fastapi_app: FastAPI,
    settings: AdminSettings,
    api_url: str | None = None,
    signin: SignInSettings | None = None,
) -> Dash:
    """Serve the console at ``/console/`` of the admin API (a2wsgi around Dash's Flask server).

    The console calls the admin API over HTTP at ``api_url`` (default: from ``Admin.Listen``),
    with the token the operator signed in with: it has no other way in.
    """
    from a2wsgi import WSGIMiddleware

    existing: Dash | None = getattr(fastapi_app.state, "console", None)
    if existing is not None:  # mounted already (idempotent)
        return existing
    providers = ProviderCache(api_url or api_url_of(settings))
    dash_app = create_dash_app(
        providers, requests_pathname_prefix=f"{MOUNT_PATH}/", sign_in=sign_in_options(signin)
    )

    # "/console" (no slash) is redirected to "/console/" by the router (redirect_slashes).
    fastapi_app.mount(MOUNT_PATH, WSGIMiddleware(dash_app.server))  # type: ignore[arg-type]
    fastapi_app.state.console = dash_app
    fastapi_app.state.console_providers = providers
    return dash_app


def standalone_app(api_url: str) -> Dash:
    """The console on its own, at ``/console/`` of its own WSGI server (``/`` redirects)."""
    from flask import redirect

    dash_app = create_dash_app(
        ProviderCache(api_url),
        requests_pathname_prefix=f"{MOUNT_PATH}/",
        routes_pathname_prefix=f"{MOUNT_PATH}/",
    )

    def root() -> object:
        return redirect(f"{MOUNT_PATH}/")

    dash_app.server.add_url_rule("/", "root", root)
    return dash_app
