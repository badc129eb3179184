"""The Dash application: a shell (header, navigation, sign-in) around the pages.

``create_dash_app(provider_factory)`` builds it; the factory turns the signed-in operator's token
into a :class:`~console.provider.ConsoleProvider`. Mounted in the admin API at ``/console/``
(:func:`console.mount.mount_console`) or run on its own (``python -m console``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from dash import ClientsideFunction, Dash, Input, Output, State, dcc, html, set_props
from dash.development.base_component import Component
from flask import Flask

from .components import alert, attrs
from .ids import Ids, OpsIds
from .pages import (
    GROUPS,
    ROLES,
    ConsolePage,
    ProviderFactory,
    Providers,
    alerts,
    audit,
    delivery,
    hot,
    jobs,
    login,
    overview,
    sessions,
    slos,
    statistics,
    subject_browser,
    subjects,
    trace,
    trends,
    watched,
)
from .provider import ProviderError
from .requests import refuse_bad_requests
from .security import CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, page_headers

ASSETS = Path(__file__).parent / "assets"
#: every page, in the navigation's order (each group's first page is its tab's target)
PAGES: tuple[ConsolePage, ...] = (
    overview.PAGE,
    subjects.PAGE,
    sessions.PAGE,
    trace.PAGE,
    delivery.PAGE,
    slos.PAGE,
    statistics.PAGE,
    trends.PAGE,
    hot.PAGE,
    watched.PAGE,
    subject_browser.PAGE,
    jobs.PAGE,
    alerts.PAGE,
    audit.PAGE,
)
_MODULES = (
    overview,
    statistics,
    trends,
    subjects,
    sessions,
    jobs,
    audit,
    login,
    hot,
    watched,
    alerts,
    trace,
    delivery,
    subject_browser,
    slos,
)
TITLE = "pushgrid console"
log = logging.getLogger(__name__)


def create_dash_app(
    provider_factory: ProviderFactory,
    requests_pathname_prefix: str = "/console/",
    routes_pathname_prefix: str = "/",
    sign_in: login.SignInOptions | None = None,
) -> Dash:
    """The console app.

    ``routes_pathname_prefix`` is where the WSGI app itself answers ("/" when mounted under
    ``/console`` by the admin API, which strips the mount path), ``requests_pathname_prefix``
    where the browser sees it (``/console/``). ``sign_in``: what the sign-in page offers
    besides a token (passwords, single sign-on: console/pages/login.py).
    """
    server = Flask("console", root_path=str(Path(__file__).parent))
    app = Dash(
        "console",
        server=server,  # type: ignore[arg-type]
        title=TITLE,
        update_title="",
        assets_folder=str(ASSETS),
        requests_pathname_prefix=requests_pathname_prefix,
        routes_pathname_prefix=routes_pathname_prefix,
        suppress_callback_exceptions=True,
        serve_locally=True,
        on_error=show_unexpected_error,
        # the renderer sends the session's CSRF token (the readable cookie) with every callback
        # request; the console forwards it to the admin API, which checks it (ADR 052)
        csrf_token_name=CSRF_COOKIE,
        csrf_header_name=CSRF_HEADER,
    )
    app.layout = shell(app)
    everything = login.SignInOptions(password=True, sso_url="sso")
    app.validation_layout = html.Div(  # type: ignore[assignment]
        [shell(app), login.layout(everything), *(page.layout() for page in PAGES)]
    )
    providers = Providers(provider_factory)
    for module in _MODULES:
        module.register(app, providers)
    _register_shell(app, providers, sign_in or login.SignInOptions())
    _security_headers(app)
    refuse_bad_requests(app)
    return app


def _security_headers(app: Dash) -> None:
    """CSP (scripts from the console itself and its inline scripts' hashes), no framing, no
    sniffing, no referrer on every answer (console/security.py). The hashes are taken at the
    first request, when every inline script (Dash's renderer) is known."""
    headers: dict[str, str] = {}

    def add(response: Any) -> Any:
        if not headers:
            headers.update(page_headers(app.csp_hashes()))
        for name, value in headers.items():
            response.headers.setdefault(name, value)
        return response

    app.server.after_request(add)


def shell(app: Dash) -> Component:
    return html.Div(
        [
            dcc.Location(id=Ids.URL, refresh=False),
            dcc.Store(id=Ids.TOKEN, storage_type="session"),
            dcc.Store(id=Ids.OPERATOR, storage_type="session"),
            html.Header(
                [
                    html.A(
                        [
                            html.Span("push", className="brand-a"),
                            html.Span("grid", className="brand-b"),
                            html.Span("console", className="brand-c"),
                        ],
                        href=href(app, ""),
                        className="brand",
                    ),
                    html.Nav(id=Ids.NAV, className="nav", **attrs({"aria-label": "sections"})),
                    html.Div(
                        [
                            html.Span(id=Ids.USER, className="user"),
                            html.Button(
                                "Sign out", id=Ids.SIGN_OUT, className="button small", n_clicks=0
                            ),
                        ],
                        className="user-area",
                    ),
                ],
                className="topbar",
            ),
            html.Nav(id=Ids.SUBNAV, className="subnav", **attrs({"aria-label": "pages"})),
            html.Div(id=Ids.GLOBAL_ALERT, className="alerts global-alerts"),
            # firing alerts, on every page (console/pages/alerts.py: show_banner)
            html.Div(id=OpsIds.ALERT_BANNER, className="alerts alert-banner"),
            dcc.Interval(id=OpsIds.ALERT_BANNER_INTERVAL, interval=alerts.BANNER_MS),
            html.Main(id=Ids.PAGE, className="main"),
        ],
        id=Ids.SHELL,
        className="console",
    )


def show_unexpected_error(error: Exception) -> None:
    """Any exception a callback did not handle: logged, and shown above the page."""
    log.error("console callback failed: %s", error, exc_info=error)
    text = f"the console hit an unexpected error: {type(error).__name__}: {error}"
    set_props(Ids.GLOBAL_ALERT, {"children": alert([text])})


def href(app: Dash, path: str) -> str:
    """The browser path of a console page: ``/console/`` + ``statistics``."""
    prefix = str(app.config.requests_pathname_prefix)
    return prefix + path.lstrip("/")


def page_for(app: Dash, pathname: str | None) -> ConsolePage | None:
    """The page of a browser path (``/console/statistics`` -> Statistics), None if unknown."""
    relative = app.strip_relative_path(pathname or "") or ""
    for page in PAGES:
        if page.path == relative.strip("/"):
            return page
    return None


def offered(role: str | None) -> list[ConsolePage]:
    """The pages ``role`` may use, in the navigation's order (a viewer is not offered the
    Live trace, an operator not the Audit log: their reads would answer 403)."""
    return [page for page in PAGES if page.allows(role)]


def nav(
    app: Dash, current: ConsolePage | None, role: str | None = None
) -> tuple[list[Component], list[Component]]:
    """(the group tabs, the current group's pages): two short rows that fit 1366 px where one
    row of eleven pages did not (issue 34). A group's tab opens its first page."""
    pages = offered(role)
    group = current.group if current is not None else GROUPS[0]
    tabs: list[Component] = []
    for name in GROUPS:
        members = [page for page in pages if page.group == name]
        if members:
            tabs.append(
                dcc.Link(
                    name,
                    href=href(app, members[0].path),
                    className="nav-link active" if name == group else "nav-link",
                    id=f"nav-group-{name.lower()}",
                )
            )
    links: list[Component] = [
        dcc.Link(
            [html.Span(page.icon, className="nav-icon"), page.title],
            href=href(app, page.path),
            className="subnav-link active" if page is current else "subnav-link",
            id=f"nav-{page.path or 'overview'}",
        )
        for page in pages
        if page.group == group
    ]
    return tabs, links


def not_found(pathname: str | None) -> Component:
    return html.Div(
        [html.H1("Not found"), html.P(f"There is no console page at {pathname}.")],
        className="page",
    )


def user_label(operator: dict[str, Any] | None) -> str:
    if not operator:
        return ""
    return f"{operator.get('name', '?')} · {operator.get('role', '?')}"


#: the token store's value for a browser signed in with a password or single sign-on: the
#: secret is then the HttpOnly cookie, which no script can read (ADR 052)
SESSION_MARKER = "session"


def cookie_operator(providers: Providers) -> dict[str, Any] | None:
    """Who the browser's session cookie signs in (None: no cookie, or the session ended)."""
    from flask import request

    if not request.cookies.get(SESSION_COOKIE):
        return None
    try:
        return providers(SESSION_MARKER).whoami().model_dump(mode="json")
    except ProviderError:
        return None


def _register_shell(app: Dash, providers: Providers, sign_in: login.SignInOptions) -> None:
    @app.callback(
        Output(Ids.PAGE, "children"),
        Output(Ids.NAV, "children"),
        Output(Ids.SUBNAV, "children"),
        Output(Ids.SHELL, "className"),
        Output(Ids.USER, "children"),
        Output(Ids.SIGN_OUT, "style"),
        Output(Ids.GLOBAL_ALERT, "children"),
        Input(Ids.URL, "pathname"),
        Input(Ids.TOKEN, "data"),
        State(Ids.OPERATOR, "data"),
        State(Ids.URL, "search"),
    )
    def route(
        pathname: str | None,
        token: str | None,
        operator: dict[str, Any] | None,
        search: str | None,
    ) -> tuple[Any, ...]:
        hidden = {"display": "none"}
        if not token or token == SESSION_MARKER:
            # a session cookie (password, single sign-on) is checked on every navigation: an
            # ended session shows the sign-in page, a new tab of a signed-in browser the page
            found = cookie_operator(providers)
            if found is None:
                if token:
                    set_props(Ids.TOKEN, {"data": None})
                error = login.sso_error(search)
                return login.layout(sign_in, error), [], [], "console", "", hidden, []
            if token != SESSION_MARKER or found != operator:
                set_props(Ids.OPERATOR, {"data": found})
                set_props(Ids.TOKEN, {"data": SESSION_MARKER})
            operator = found
        page = page_for(app, pathname)
        content = not_found(pathname) if page is None else page.layout()
        role = (operator or {}).get("role")
        tabs, links = nav(app, page, role)
        shell_class = f"console role-{role if role in ROLES else 'viewer'}"
        return content, tabs, links, shell_class, user_label(operator), {}, []

    app.clientside_callback(  # type: ignore[no-untyped-call]
        ClientsideFunction(namespace="pushgridSignIn", function_name="signOut"),
        Output(Ids.TOKEN, "data", allow_duplicate=True),
        Output(Ids.OPERATOR, "data", allow_duplicate=True),
        Input(Ids.SIGN_OUT, "n_clicks"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
