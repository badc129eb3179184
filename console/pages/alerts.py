"""Alerts: firing and pending alerts, the rules (an operator creates them here), the history.

The banner of firing alerts on every page is :func:`banner` (the shell's callback calls it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.ops.alerts import RULE_WINDOWS, SIGNAL_NAMES

from .. import format as fmt
from ..components import alert, attrs, card, notice, page_header, pill, table
from ..ids import AlertRowIds, Ids, OpsIds
from ..ops_provider import OpsProvider
from ..polling import paced
from ..provider import ProviderError
from . import OPERATOR_ONLY, ConsolePage, Providers, alert_actions, alert_history

PATH = "alerts"
TITLE = "Alerts"
REFRESH_MS = 2000
BANNER_MS = 3000
_KIND = {"firing": "bad", "pending": "warn", "resolved": "good"}
WINDOWS = RULE_WINDOWS  # exactly the windows the admin API accepts (one list, the ops contract)
# the built-in signals a rule can read (the ops contract's list, shared with the admin API)
SIGNALS = SIGNAL_NAMES


def banner(alerts: Sequence[Mapping[str, Any]]) -> list[Component]:
    """The firing alerts nobody acknowledged or silenced, one line each, shown above every page
    (nothing when none fire)."""
    firing = [
        a
        for a in alerts
        if a.get("state") == "firing"
        and not a.get("acknowledged_by")
        and not a.get("silenced_until")
    ]
    return [
        html.Div(
            [pill(str(a["severity"]), "bad"), html.Span(f" {a['summary']}")],
            className="alert alert-error firing-alert",
            role="alert",
            **attrs({"data-rule": a["rule"], "data-target": a["target"]}),
        )
        for a in firing
    ]


def _row_button(text: str, action: AlertRowIds, pick: str) -> Component:
    """A row's own action button. It has no Dash id: the table is drawn again every refresh,
    and a callback fed by buttons drawn again was triggered again by each redraw, which made
    Dash drop the answer of the action still running (the silence was made, the page never
    said so). console/assets/row_actions.js records the click, at the DOM event, in the store
    :data:`AlertRowIds.ROW_ACTION` outside the table."""
    return html.Button(
        text,
        className="button small",
        **attrs(
            {
                "data-row-action": action.value,
                "data-pick": pick,
                "data-store": AlertRowIds.ROW_ACTION,
            }
        ),
    )


def render_active(alerts: Sequence[Mapping[str, Any]], now: float) -> Component:
    """Each alert with since when it is in its state and for how long (the API's ``since``),
    and, for an operator, its own Acknowledge and Silence buttons."""
    rows = []
    for a in alerts:
        since = fmt.iso_unix(a.get("since"))
        pick = f"{a['rule_id']}|{a['target']}"
        rows.append(
            [
                pill(a["state"], _KIND.get(a["state"], "muted")),
                a["rule"],
                a["target"],
                a["severity"],
                fmt.compact(a.get("value"), str(a.get("indicator") or "")),
                fmt.iso_time(a.get("since")),
                fmt.duration(None if since is None else max(0.0, now - since)),
                a["summary"],
                a.get("acknowledged_by") or "",
                fmt.iso_time(a["silenced_until"]) if a.get("silenced_until") else "",
                html.Div(
                    [
                        _row_button("Acknowledge", AlertRowIds.ACK, pick),
                        _row_button("Silence", AlertRowIds.SILENCE, pick),
                    ],
                    className=f"row-actions {OPERATOR_ONLY}",
                ),
            ]
        )
    props = [
        {
            "data-rule": a["rule"],
            "data-target": a["target"],
            "data-state": a["state"],
            "data-since": a.get("since") or "",
            "data-acknowledged": "yes" if a.get("acknowledged_by") else "no",
            "data-silenced": "yes" if a.get("silenced_until") else "no",
        }
        for a in alerts
    ]
    return table(
        [
            "state",
            "rule",
            "target",
            "severity",
            "value",
            "since",
            "for",
            "summary",
            "acknowledged by",
            "silenced until",
            "",
        ],
        rows,
        row_props=props,
        empty="no alert is pending or firing",
    )


def render_rules(rules: Sequence[Mapping[str, Any]]) -> Component:
    rows = []
    for r in rules:
        what = (
            r["indicator"]
            if r["window"] == "current"
            else (f"{r['stat']}({r['indicator']} over {r['window']})")
        )
        rows.append(
            [
                r["name"] + (" (built-in)" if r.get("builtin") else ""),
                html.Code(
                    f"{what} {r['comparison']} "
                    f"{fmt.compact(r['threshold'], str(r.get('indicator') or ''))}"
                ),
                f"avg over {fmt.number(r['for'])} s" if r["for"] else "last value",
                clear_text(r),
                r["severity"],
                r["scope"],
                "yes" if r["enabled"] else "no",
            ]
        )
    return table(
        ["name", "condition", "window", "clears", "severity", "scope", "enabled"],
        rows,
        row_props=[
            {"data-rule": r["name"], "data-enabled": str(r["enabled"]).lower()} for r in rules
        ],
        empty="no rules yet",
    )


def clear_text(rule: Mapping[str, Any]) -> str:
    """When a firing alert of the rule resolves (its hysteresis), in words."""
    at = rule["threshold"] if rule.get("clear_threshold") is None else rule["clear_threshold"]
    seconds = rule["for"] if rule.get("clear_for") is None else rule["clear_for"]
    shown = fmt.compact(at, str(rule.get("indicator") or ""))  # as the condition shows it
    return f"not {rule['comparison']} {shown} for {fmt.number(seconds)} s"


def rule_body(values: Mapping[str, Any]) -> dict[str, Any]:
    """The form's values -> the body of ``POST /alerts/rules`` (the API validates it)."""
    return {
        "name": (values.get("name") or "").strip(),
        "indicator": values.get("indicator"),
        "window": values.get("window") or "current",
        "stat": values.get("stat") or "max",
        "comparison": values.get("comparison") or ">",
        "threshold": values.get("threshold"),
        "for": values.get("for") or 0,
        "clear_threshold": values.get("clear_threshold"),
        "clear_for": values.get("clear_for"),
        "severity": values.get("severity") or "warning",
        "scope": values.get("scope") or "member",
    }


def _field(label: str, control: Component) -> Component:
    return html.Label([label, control], className="field")


def _select(id_: str, label: str, options: Sequence[str], value: str) -> Component:
    dropdown = dcc.Dropdown(id=id_, options=list(options), value=value, clearable=False)
    return _field(label, dropdown)


def _form() -> Component:
    return card(
        [
            html.H2("New rule, or edit the one picked below"),
            html.Div(
                [
                    _field(
                        "name",
                        dcc.Input(id=OpsIds.RULE_NAME, placeholder="HighFanout", className="input"),
                    ),
                    _select(
                        OpsIds.RULE_INDICATOR,
                        "indicator or signal",
                        (*INDICATOR_NAMES, *SIGNALS),
                        "connected_users",
                    ),
                    _select(OpsIds.RULE_WINDOW, "window", WINDOWS, "current"),
                    _select(OpsIds.RULE_STAT, "statistic", ("max", "avg", "stddev"), "max"),
                    _select(
                        OpsIds.RULE_COMPARISON,
                        "comparison",
                        (">", ">=", "<", "<=", "==", "!="),
                        ">",
                    ),
                    _field(
                        "threshold",
                        dcc.Input(id=OpsIds.RULE_THRESHOLD, type="number", className="input"),
                    ),
                    _field(
                        "for (seconds averaged)",
                        dcc.Input(
                            id=OpsIds.RULE_FOR, type="number", min=0, value=0, className="input"
                        ),
                    ),
                    _field(
                        "clear threshold",
                        dcc.Input(
                            id=OpsIds.RULE_CLEAR_THRESHOLD,
                            type="number",
                            placeholder="threshold",
                            className="input",
                        ),
                    ),
                    _field(
                        "clear for (seconds)",
                        dcc.Input(
                            id=OpsIds.RULE_CLEAR_FOR,
                            type="number",
                            min=0,
                            placeholder="for",
                            className="input",
                        ),
                    ),
                    _select(
                        OpsIds.RULE_SEVERITY, "severity", ("info", "warning", "critical"), "warning"
                    ),
                    _select(OpsIds.RULE_SCOPE, "scope", ("member", "cluster"), "member"),
                    html.Button(
                        "Create rule", id=OpsIds.RULE_CREATE, className="button", n_clicks=0
                    ),
                ],
                className="rule-form",
            ),
            html.Div(id=OpsIds.RULE_RESULT),
        ],
        class_name=OPERATOR_ONLY,  # rules are written by operators
    )


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Rules over the live indicators and the built-in signals, averaged over their "
                "window and cleared with hysteresis, evaluated every second",
            ),
            html.Div(id=OpsIds.ALERTS_ALERT, className="alerts"),
            card(
                [
                    html.H2("Pending and firing"),
                    dcc.Input(
                        id=AlertRowIds.COMMENT,
                        placeholder="comment for Acknowledge / Silence (who reads the audit log "
                        "and the silences sees it)",
                        maxLength=1024,
                        className=f"input {OPERATOR_ONLY}",
                    ),
                    html.Div(id=OpsIds.ALERTS_ACTIVE),
                ]
            ),
            alert_actions.alerts_card(),
            _form(),
            card(
                [
                    html.H2("Rules"),
                    html.Div(id=OpsIds.ALERTS_RULES),
                    alert_actions.rules_actions(),
                ]
            ),
            card(
                [
                    html.H2("History"),
                    *alert_history.layout(),
                ]
            ),
            dcc.Interval(id=OpsIds.ALERTS_INTERVAL, interval=REFRESH_MS),
            dcc.Store(id=AlertRowIds.ROW_ACTION, data=None),
        ],
        className="page page-alerts",
    )


def _ops(providers: Providers, token: str | None) -> OpsProvider | None:
    provider = providers(token)
    return provider if isinstance(provider, OpsProvider) else None


FORM_IDS = (
    OpsIds.RULE_NAME,
    OpsIds.RULE_INDICATOR,
    OpsIds.RULE_WINDOW,
    OpsIds.RULE_STAT,
    OpsIds.RULE_COMPARISON,
    OpsIds.RULE_THRESHOLD,
    OpsIds.RULE_FOR,
    OpsIds.RULE_CLEAR_THRESHOLD,
    OpsIds.RULE_CLEAR_FOR,
    OpsIds.RULE_SEVERITY,
    OpsIds.RULE_SCOPE,
)  # in alert_actions.FORM_KEYS order


def register(app: Dash, providers: Providers) -> None:
    _wire_rules(app, providers)
    _wire_banner(app, providers)
    alert_history.register(app, providers)
    alert_actions.register(app, providers, [State(i, "value") for i in FORM_IDS])


def _wire_rules(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.ALERTS_ACTIVE, "children"),
        Output(OpsIds.ALERTS_RULES, "children"),
        Output(OpsIds.ALERTS_ALERT, "children"),
        Output(OpsIds.ALERTS_SILENCES, "children"),
        Output(OpsIds.ALERT_PICK, "options"),
        Output(OpsIds.RULE_PICK, "options"),
        Output(OpsIds.SILENCE_PICK, "options"),
        Output(AlertRowIds.HISTORY_RULE, "options"),
        Input(OpsIds.ALERTS_INTERVAL, "n_intervals"),
        Input(OpsIds.RULE_RESULT, "children"),
        Input(OpsIds.ALERT_ACTION_RESULT, "children"),
        Input(OpsIds.RULE_ACTION_RESULT, "children"),
        State(Ids.TOKEN, "data"),
        running=paced(OpsIds.ALERTS_INTERVAL),
    )
    def refresh(_n: int | None, _r: Any, _a: Any, _c: Any, token: str | None) -> tuple[Any, ...]:
        ops = _ops(providers, token)
        unchanged = (no_update,) * 2
        if ops is None:
            return (*unchanged, alert(["no admin API behind this console"]), *(no_update,) * 5)
        now = time.time()
        try:
            active, rules = ops.alerts(), ops.alert_rules()
            silences = ops.silences()
        except ProviderError as exc:
            return (*unchanged, alert([exc]), *(no_update,) * 5)
        return (
            render_active(active, now),
            render_rules(rules),
            [],
            alert_actions.render_silences(silences),
            alert_actions.alert_options(active),
            alert_actions.rule_options(rules),
            alert_actions.silence_options(silences),
            alert_actions.rule_options(rules),
        )

    @app.callback(
        Output(OpsIds.RULE_RESULT, "children"),
        Input(OpsIds.RULE_CREATE, "n_clicks"),
        State(OpsIds.RULE_NAME, "value"),
        State(OpsIds.RULE_INDICATOR, "value"),
        State(OpsIds.RULE_WINDOW, "value"),
        State(OpsIds.RULE_STAT, "value"),
        State(OpsIds.RULE_COMPARISON, "value"),
        State(OpsIds.RULE_THRESHOLD, "value"),
        State(OpsIds.RULE_FOR, "value"),
        State(OpsIds.RULE_CLEAR_THRESHOLD, "value"),
        State(OpsIds.RULE_CLEAR_FOR, "value"),
        State(OpsIds.RULE_SEVERITY, "value"),
        State(OpsIds.RULE_SCOPE, "value"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def create(_clicks: int, *values_and_token: Any) -> Any:
        *values, token = values_and_token
        keys = alert_actions.FORM_KEYS
        ops = _ops(providers, token)
        if ops is None:
            return alert(["no admin API behind this console"])
        try:
            created = ops.create_rule(rule_body(dict(zip(keys, values, strict=True))))
        except ProviderError as exc:
            return alert([exc])
        return notice(f"rule {created['name']} created", "success")


def _wire_banner(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.ALERT_BANNER, "children"),
        Input(OpsIds.ALERT_BANNER_INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        running=paced(OpsIds.ALERT_BANNER_INTERVAL),
    )
    def show_banner(_n: int | None, token: str | None) -> Any:
        if not token:
            return []
        ops = _ops(providers, token)
        if ops is None:
            return []
        try:
            return banner(ops.alerts())
        except ProviderError:
            return no_update  # the page itself says what is wrong


PAGE = ConsolePage(PATH, TITLE, "⚠", layout, group="Admin")
