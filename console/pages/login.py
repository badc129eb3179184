"""Sign-in: a user name and password, single sign-on when configured, or an admin-API token.

Password and single sign-on (ADR 052) leave the secret in an HttpOnly cookie the admin API sets;
the tab's token store then holds only the marker ``session`` (console/mount.py). The password
form posts straight from the browser to ``/api/v1/auth/login`` (assets/signin.js), so the admin
API sees the browser's own address for its lockout. "Sign in with SSO" is a plain link to
``/api/v1/auth/oidc/start``; the provider sends the browser back to ``/console/``, with
``?sign_in_error=<code>`` when the sign-in was refused. An API token (automation, and the first
way in that ``make up`` prints) still works: the browser keeps it for the tab's session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from dash import ClientsideFunction, Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component
from dash.exceptions import PreventUpdate

from ..components import alert, card
from ..ids import Ids
from ..provider import ProviderError
from . import Providers

#: what the admin API's codes of a refused single sign-on mean (admin_api/oidc.py)
SSO_ERRORS: dict[str, str] = {
    "no_role": "your account has no pushgrid role (ask an administrator)",
    "state_mismatch": "the sign-in was started in another browser or tab: try again",
    "unknown_state": "the sign-in took too long or was used already: try again",
    "provider_refused": "the identity provider refused the sign-in",
    "provider_unreachable": "the identity provider could not be reached",
    "provider_error": "the identity provider's answer could not be used",
    # messages keyed by an error code, not secrets (bandit B105 reads "token" in the key)
    "invalid_id_token": "the identity provider's token was refused",  # nosec B105
    "token_refused": "the identity provider refused to issue a token",  # nosec B105
}


@dataclass(frozen=True)
class SignInOptions:
    """What the sign-in page offers: passwords when the console is served by the admin API
    (the cookie needs the same origin), single sign-on when the admin API has OIDC set."""

    password: bool = False
    sso_name: str | None = None
    sso_url: str | None = None


def sso_error(search: str | None) -> str | None:
    """The message of ``?sign_in_error=<code>`` (None: no error in the URL)."""
    codes = parse_qs((search or "").lstrip("?")).get("sign_in_error")
    if not codes:
        return None
    code = codes[0][:64]
    return f"single sign-on failed: {SSO_ERRORS.get(code, code)}"


def _password_form() -> list[Component]:
    return [
        dcc.Input(
            id=Ids.LOGIN_USER, type="text", placeholder="user name", className="input",
            autoComplete="username", n_submit=0,
        ),
        dcc.Input(
            id=Ids.LOGIN_PASSWORD, type="password", placeholder="password", className="input",
            autoComplete="current-password", n_submit=0,
        ),
        html.Button(
            "Sign in", id=Ids.LOGIN_PASSWORD_BUTTON, className="button primary wide", n_clicks=0
        ),
    ]  # fmt: skip


def _token_form(primary: bool) -> list[Component]:
    return [
        html.P(
            "Or with an admin-API token:" if not primary else "Sign in with an admin-API token.",
            className="muted small" if not primary else "muted",
        ),
        dcc.Input(
            id=Ids.LOGIN_TOKEN,
            type="password",
            placeholder="pgt_…",
            className="input",
            autoComplete="off",
            n_submit=0,
        ),
        html.Button(
            "Sign in with the token",
            id=Ids.LOGIN_BUTTON,
            className="button wide" if not primary else "button primary wide",
            n_clicks=0,
        ),
    ]


def layout(options: SignInOptions | None = None, error: str | None = None) -> Component:
    options = options or SignInOptions()
    sso: list[Component] = []
    if options.sso_url:
        sso = [
            html.A(
                f"Sign in with {options.sso_name or 'SSO'}",
                href=options.sso_url,
                id=Ids.LOGIN_SSO,
                className="button wide sso-button",
            )
        ]
    brand = html.Div(
        [html.Span("push", className="brand-a"), html.Span("grid", className="brand-b")],
        className="brand big-brand",
    )
    intro = html.P("Ops console: sign in.", className="muted")
    return html.Div(
        card(
            [
                brand,
                intro,
                *(_password_form() if options.password else []),
                *sso,
                *_token_form(primary=not options.password and not sso),
                html.Div(alert([error]) if error else [], id=Ids.LOGIN_ALERT, className="alerts"),
                html.P(
                    [
                        "Users: ",
                        html.Code("pushgrid admin user add NAME --role operator"),
                        "; tokens: ",
                        html.Code("pushgrid admin create-token --role operator"),
                        " (viewers can look, operators can also act).",
                    ],
                    className="muted small",
                ),
            ],
            class_name="login-card",
        ),
        className="page page-login",
    )


def register(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.TOKEN, "data"),
        Output(Ids.OPERATOR, "data"),
        Output(Ids.LOGIN_ALERT, "children"),
        Input(Ids.LOGIN_BUTTON, "n_clicks"),
        Input(Ids.LOGIN_TOKEN, "n_submit"),
        State(Ids.LOGIN_TOKEN, "value"),
        prevent_initial_call=True,
    )
    def sign_in(clicks: int | None, submits: int | None, token: str | None) -> tuple[Any, ...]:
        if not clicks and not submits:  # the form was just rendered: nothing was asked yet
            raise PreventUpdate
        token = (token or "").strip()
        if not token:
            return no_update, no_update, alert(["paste a token first"])
        try:
            operator = providers(token).whoami()
        except ProviderError as exc:
            return no_update, no_update, alert([exc])
        return token, operator.model_dump(mode="json"), []

    # the password goes from the browser to the admin API, never through a Dash callback
    app.clientside_callback(  # type: ignore[no-untyped-call]
        ClientsideFunction(namespace="pushgridSignIn", function_name="password"),
        Output(Ids.TOKEN, "data", allow_duplicate=True),
        Output(Ids.OPERATOR, "data", allow_duplicate=True),
        Output(Ids.LOGIN_ALERT, "children", allow_duplicate=True),
        Input(Ids.LOGIN_PASSWORD_BUTTON, "n_clicks"),
        Input(Ids.LOGIN_PASSWORD, "n_submit"),
        State(Ids.LOGIN_USER, "value"),
        State(Ids.LOGIN_PASSWORD, "value"),
        prevent_initial_call=True,
    )
