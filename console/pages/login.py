"""Login: the operator pastes an admin-API token; the browser keeps it for the tab's session."""

from __future__ import annotations

from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from ..components import alert, card
from ..ids import Ids
from ..provider import ProviderError
from . import Providers


def layout() -> Component:
    return html.Div(
        card(
            [
                html.Div(
                    [
                        html.Span("push", className="brand-a"),
                        html.Span("grid", className="brand-b"),
                    ],
                    className="brand big-brand",
                ),
                html.P("Ops console: sign in with an admin-API token.", className="muted"),
                dcc.Input(
                    id=Ids.LOGIN_TOKEN,
                    type="password",
                    placeholder="pgt_…",
                    className="input",
                    autoComplete="off",
                    n_submit=0,
                ),
                html.Button(
                    "Sign in", id=Ids.LOGIN_BUTTON, className="button primary wide", n_clicks=0
                ),
                html.Div(id=Ids.LOGIN_ALERT, className="alerts"),
                html.P(
                    [
                        "Create one with ",
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
    def sign_in(_clicks: int, _submits: int, token: str | None) -> tuple[Any, ...]:
        token = (token or "").strip()
        if not token:
            return no_update, no_update, alert(["paste a token first"])
        try:
            operator = providers(token).whoami()
        except ProviderError as exc:
            return no_update, no_update, alert([exc])
        return token, operator.to_json(), []
