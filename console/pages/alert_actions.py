"""The Alerts page's actions (issue 21 item 3): acknowledge or silence an alert, end a silence,
edit, enable/disable or delete a rule. Each is one admin API call (operator role, audited
there); the functions below turn the page's values into those calls and are unit-tested.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import alert, card, notice, table
from ..ids import AlertRowIds, Ids, OpsIds
from ..ops_provider import OpsProvider
from ..provider import ProviderError
from . import OPERATOR_ONLY, Providers

SILENCE_DURATIONS: Final[dict[str, int]] = {
    "15 min": 900,
    "1 h": 3600,
    "4 h": 14_400,
    "1 day": 86_400,
}
NO_API: Final = "no admin API behind this console"


def alert_options(alerts: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One choice per active alert; the value is ``rule_id|target``."""
    return [
        {
            "label": f"{a['rule']} on {a['target']} ({a['state']})",
            "value": f"{a['rule_id']}|{a['target']}",
        }
        for a in alerts
    ]


def parse_pick(value: str | None) -> tuple[int, str] | None:
    rule_id, sep, target = (value or "").partition("|")
    if not sep or not rule_id.isdigit() or not target:
        return None
    return int(rule_id), target


def ack_body(pick: str | None, comment: str | None = None) -> dict[str, Any] | None:
    """Acknowledge the picked alert with the operator's comment (a default one without)."""
    chosen = parse_pick(pick)
    if chosen is None:
        return None
    said = (comment or "").strip() or "acknowledged in the console"
    return {"rule_id": chosen[0], "target": chosen[1], "comment": said}


def silence_body(
    pick: str | None, duration: str | None, now: datetime, comment: str | None = None
) -> dict[str, Any] | None:
    """Silence the picked alert's rule on its target for the chosen duration from ``now``,
    with the operator's comment (a default one without)."""
    chosen = parse_pick(pick)
    seconds = SILENCE_DURATIONS.get(duration or "")
    if chosen is None or seconds is None:
        return None
    until = now + timedelta(seconds=seconds)
    return {
        "rule_id": chosen[0],
        "target": chosen[1],
        "until": until.isoformat(),
        "comment": (comment or "").strip() or f"silenced in the console for {duration}",
    }


def rule_options(rules: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    def label(r: Mapping[str, Any]) -> str:
        marks = [
            m for m, on in (("built-in", r.get("builtin")), ("disabled", not r["enabled"])) if on
        ]
        return str(r["name"]) + (f" ({', '.join(marks)})" if marks else "")

    return [{"label": label(r), "value": r["id"]} for r in rules]


FORM_KEYS: Final = (
    "name",
    "indicator",
    "window",
    "stat",
    "comparison",
    "threshold",
    "for",
    "clear_threshold",
    "clear_for",
    "severity",
    "scope",
)


def form_values(rule: Mapping[str, Any]) -> tuple[Any, ...]:
    """A rule's values in the form's order (:data:`FORM_KEYS`), to edit it there."""
    return tuple(rule.get(key) for key in FORM_KEYS)


def render_silences(silences: Sequence[Mapping[str, Any]]) -> Component:
    rows = [
        [
            s["rule"],
            s.get("target") or "every target",
            fmt.iso_time(s["until"]),
            s.get("created_by") or fmt.DASH,
            s.get("comment") or "",
        ]
        for s in silences
    ]
    return table(
        ["rule", "target", "until", "by", "comment"],
        rows,
        row_props=[{"data-rule": s["rule"]} for s in silences],
        empty="no silence in force",
    )


def silence_options(silences: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"label": f"{s['rule']} on {s.get('target') or 'every target'}", "value": s["id"]}
        for s in silences
    ]


def _dropdown(id_: str, placeholder: str, **props: Any) -> Component:
    return dcc.Dropdown(id=id_, options=[], placeholder=placeholder, **props)


def _button(text: str, id_: str, kind: str = "button") -> Component:
    return html.Button(text, id=id_, className=kind, n_clicks=0)


def alerts_card() -> Component:
    """Acknowledge or silence an active alert; end a silence."""
    return card(
        [
            html.H2("Acknowledge or silence"),
            html.Div(
                [
                    html.Label(
                        ["alert", _dropdown(OpsIds.ALERT_PICK, "an active alert")],
                        className="field",
                    ),
                    _button("Acknowledge", OpsIds.ALERT_ACK),
                    html.Label(
                        [
                            "silence for",
                            dcc.Dropdown(
                                id=OpsIds.SILENCE_FOR,
                                options=list(SILENCE_DURATIONS),
                                value="1 h",
                                clearable=False,
                            ),
                        ],
                        className="field",
                    ),
                    _button("Silence", OpsIds.ALERT_SILENCE),
                ],
                className="rule-form",
            ),
            html.H2("Silences"),
            html.Div(id=OpsIds.ALERTS_SILENCES),
            html.Div(
                [
                    html.Label(
                        ["silence", _dropdown(OpsIds.SILENCE_PICK, "a silence")], className="field"
                    ),
                    _button("End silence", OpsIds.SILENCE_END),
                ],
                className="rule-form",
            ),
            html.Div(id=OpsIds.ALERT_ACTION_RESULT),
        ],
        class_name=OPERATOR_ONLY,  # acknowledging and silencing need the operator role
    )


def rules_actions() -> Component:
    """Pick a rule: load it into the form (then Save changes), enable/disable it, delete it."""
    return html.Div(
        [
            html.Label(["rule", _dropdown(OpsIds.RULE_PICK, "a rule")], className="field"),
            _button("Edit in the form", OpsIds.RULE_EDIT),
            _button("Save changes", OpsIds.RULE_SAVE),
            _button("Enable / disable", OpsIds.RULE_TOGGLE),
            _button("Delete", OpsIds.RULE_DELETE, "button danger"),
            html.Div(id=OpsIds.RULE_ACTION_RESULT),
        ],
        className=f"rule-form {OPERATOR_ONLY}",
    )


def _ops(providers: Providers, token: str | None) -> OpsProvider | None:
    provider = providers(token)
    return provider if isinstance(provider, OpsProvider) else None


def _run(ops: OpsProvider | None, action: Callable[[OpsProvider], str]) -> Any:
    """One action through the provider; the page says what happened."""
    if ops is None:
        return alert([NO_API])
    try:
        return notice(action(ops), "success")
    except ProviderError as exc:
        return alert([exc])


def alert_action(
    ops: OpsProvider,
    button: str | dict[str, Any] | None,
    pick: str | None,
    duration: str | None,
    silence_id: int | None,
    now: datetime,
    comment: str | None = None,
) -> str:
    """What one of the alert buttons does (raises :class:`ProviderError`); the page's text.
    A row's own button (``button`` a dict id) acts on that row's alert with ``comment``."""
    if isinstance(button, dict):  # a row's Acknowledge or Silence
        pick = str(button.get("index", ""))
        button = OpsIds.ALERT_ACK if button.get("type") == AlertRowIds.ACK else "silence"
    if button == OpsIds.SILENCE_END:
        if silence_id is None:
            return "pick a silence first"
        ops.end_silence(int(silence_id))
        return "silence ended"
    acknowledging = button == OpsIds.ALERT_ACK
    body = ack_body(pick, comment) if acknowledging else silence_body(pick, duration, now, comment)
    if body is None:
        return "pick an alert first"
    if acknowledging:
        ops.acknowledge(body)
        return f"{body['target']} acknowledged"
    ops.silence(body)
    return f"silenced until {fmt.iso_time(body['until'])}"


def rule_action(
    ops: OpsProvider, button: str | None, rule_id: int | None, form: Mapping[str, Any]
) -> str:
    """What one of the rule buttons does (raises :class:`ProviderError`); the page's text."""
    if rule_id is None:
        return "pick a rule first"
    rules = {r["id"]: r for r in ops.alert_rules()}
    rule = rules.get(rule_id)
    if rule is None:
        return f"rule {rule_id} is gone"
    if button == OpsIds.RULE_DELETE:
        ops.delete_rule(rule_id)
        return f"rule {rule['name']} deleted"
    if button == OpsIds.RULE_TOGGLE:
        ops.patch_rule(rule_id, {"enabled": not rule["enabled"]})
        return f"rule {rule['name']} {'disabled' if rule['enabled'] else 'enabled'}"
    saved = ops.patch_rule(rule_id, edited_fields(form))
    return f"rule {saved['name']} saved"


def edited_fields(form: Mapping[str, Any]) -> dict[str, Any]:
    """The form's values as a PATCH body (empty clear fields: back to their defaults)."""
    body = {k: form.get(k) for k in FORM_KEYS}
    body["name"] = (body["name"] or "").strip()
    body["for"] = body["for"] or 0
    return body


def register(app: Dash, providers: Providers, form_states: Sequence[State]) -> None:
    """``form_states``: the rule form's fields in :data:`FORM_KEYS` order."""

    @app.callback(
        Output(OpsIds.ALERT_ACTION_RESULT, "children"),
        Input(OpsIds.ALERT_ACK, "n_clicks"),
        Input(OpsIds.ALERT_SILENCE, "n_clicks"),
        Input(OpsIds.SILENCE_END, "n_clicks"),
        Input(AlertRowIds.ROW_ACTION, "data"),  # a row's own button (row_actions.js)
        State(OpsIds.ALERT_PICK, "value"),
        State(OpsIds.SILENCE_FOR, "value"),
        State(OpsIds.SILENCE_PICK, "value"),
        State(AlertRowIds.COMMENT, "value"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def act(*values: Any) -> Any:
        *_clicks, row, pick, duration, silence, comment, token = values
        button = row if ctx.triggered_id == AlertRowIds.ROW_ACTION else ctx.triggered_id
        if not button:
            return no_update
        now = datetime.now(UTC)
        return _run(
            _ops(providers, token),
            lambda ops: alert_action(ops, button, pick, duration, silence, now, comment),
        )

    @app.callback(
        Output(OpsIds.RULE_ACTION_RESULT, "children"),
        Input(OpsIds.RULE_SAVE, "n_clicks"),
        Input(OpsIds.RULE_TOGGLE, "n_clicks"),
        Input(OpsIds.RULE_DELETE, "n_clicks"),
        State(OpsIds.RULE_PICK, "value"),
        *form_states,
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def change(_s: int, _t: int, _d: int, rule_id: Any, *form_and_token: Any) -> Any:
        *form, token = form_and_token
        button, values = ctx.triggered_id, dict(zip(FORM_KEYS, form, strict=True))
        return _run(_ops(providers, token), lambda ops: rule_action(ops, button, rule_id, values))

    @app.callback(
        *(Output(state.component_id, "value") for state in form_states),
        Input(OpsIds.RULE_EDIT, "n_clicks"),
        State(OpsIds.RULE_PICK, "value"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def load(_n: int, rule_id: Any, token: Any) -> tuple[Any, ...]:
        ops = _ops(providers, token)
        unchanged = tuple(no_update for _ in FORM_KEYS)
        if ops is None or rule_id is None:
            return unchanged
        try:
            rules = ops.alert_rules()
        except ProviderError:
            return unchanged
        rule = next((r for r in rules if r["id"] == rule_id), None)
        return unchanged if rule is None else form_values(rule)
