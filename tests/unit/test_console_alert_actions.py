"""The Alerts page's actions as plain functions (console/pages/alert_actions.py, alerts.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

from pushgrid.console.pages import alert_actions as actions
from pushgrid.console.pages.alerts import FORM_IDS, banner, clear_text, render_active
from pushgrid.console.pages.alerts import SIGNALS as CONSOLE_SIGNALS
from pushgrid.ops.alerts import SIGNALS, SignalName

ACTIVE = [
    {
        "rule_id": 7,
        "rule": "MemberDown",
        "target": "m3",
        "state": "firing",
        "severity": "critical",
        "summary": "MemberDown on m3",
        "value": 1.0,
    },
    {
        "rule_id": 2,
        "rule": "Busy",
        "target": "cluster",
        "state": "firing",
        "severity": "warning",
        "summary": "Busy on cluster",
        "value": 9.0,
        "acknowledged_by": "ann",
    },
    {
        "rule_id": 3,
        "rule": "Calm",
        "target": "m1",
        "state": "firing",
        "severity": "info",
        "summary": "Calm on m1",
        "value": 2.0,
        "silenced_until": "2026-01-01T01:00:00+00:00",
    },
]
RULE = {
    "id": 7,
    "name": "MemberDown",
    "indicator": "member_down",
    "window": "current",
    "stat": "max",
    "comparison": ">=",
    "threshold": 1.0,
    "for": 2.0,
    "clear_threshold": None,
    "clear_for": 5.0,
    "severity": "critical",
    "scope": "member",
    "enabled": True,
    "builtin": True,
}


def test_the_console_offers_every_signal_of_the_admin_api() -> None:
    assert set(CONSOLE_SIGNALS) == set(SIGNALS) == set(get_args(SignalName))
    assert len(FORM_IDS) == len(actions.FORM_KEYS)


def test_picking_an_alert_gives_the_bodies_of_acknowledge_and_silence() -> None:
    options = actions.alert_options(ACTIVE)
    assert options[0] == {"label": "MemberDown on m3 (firing)", "value": "7|m3"}
    assert actions.parse_pick("7|m3") == (7, "m3")
    assert actions.parse_pick("x|m3") is None
    assert actions.parse_pick(None) is None
    assert actions.ack_body("7|m3") == {
        "rule_id": 7,
        "target": "m3",
        "comment": "acknowledged in the console",
    }
    now = datetime(2026, 1, 1, tzinfo=UTC)
    body = actions.silence_body("7|m3", "4 h", now)
    assert body is not None
    assert body["until"] == "2026-01-01T04:00:00+00:00"
    assert (body["rule_id"], body["target"]) == (7, "m3")
    assert actions.silence_body("7|m3", "forever", now) is None
    assert actions.silence_body(None, "1 h", now) is None


def test_acknowledged_and_silenced_alerts_leave_the_banner_not_the_list() -> None:
    shown = banner(ACTIVE)
    assert len(shown) == 1
    assert "MemberDown on m3" in repr(shown[0])
    rows = repr(render_active(ACTIVE, 1_767_229_200.0))
    assert "ann" in rows
    assert "2026-01-01 01:00:00 UTC" in rows  # silenced until


def test_a_rule_goes_into_the_form_and_back_as_a_patch() -> None:
    values = actions.form_values(RULE)
    assert values[:3] == ("MemberDown", "member_down", "current")
    form = dict(zip(actions.FORM_KEYS, values, strict=True))
    assert actions.edited_fields({**form, "name": " MemberDown ", "for": None}) == {
        **form,
        "name": "MemberDown",
        "for": 0,
    }
    assert [
        o["label"]
        for o in actions.rule_options(
            [RULE, {**RULE, "id": 8, "name": "Mine", "builtin": False, "enabled": False}]
        )
    ] == ["MemberDown (built-in)", "Mine (disabled)"]
    assert clear_text(RULE) == "not >= 1 for 5 s"
    assert clear_text({**RULE, "clear_threshold": 0.5, "clear_for": None}) == "not >= 0.5 for 2 s"


def test_silences_are_listed_with_their_target() -> None:
    silence = {
        "id": 4,
        "rule": "MemberRestarted",
        "target": None,
        "until": "2026-01-01T01:00:00+00:00",
        "created_by": "ann",
        "comment": "",
    }
    assert actions.silence_options([silence]) == [
        {"label": "MemberRestarted on every target", "value": 4}
    ]
    assert "every target" in repr(actions.render_silences([silence]))
    assert "no silence in force" in repr(actions.render_silences([]))


def test_rule_texts_read_through_the_one_formatter() -> None:
    """Issue 34: a threshold printed with ``:g`` read ``2e-05`` or ``1e+06``."""
    rule = {**RULE, "clear_threshold": 2_000_000, "clear_for": 0.5}
    assert clear_text(rule).endswith(" for 0.5 s")
    assert "e+" not in clear_text(rule)
    assert "e-" not in clear_text({**RULE, "clear_threshold": 0.00002})


# --- issue 35 item 4: since and duration, row actions with a comment, history filters ---------


class _Recorder:
    """Records the calls an action makes (the provider is the admin API's client)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []

    def acknowledge(self, body: dict[str, object]) -> dict[str, object]:
        self.calls.append(("acknowledge", body))
        return body

    def silence(self, body: dict[str, object]) -> dict[str, object]:
        self.calls.append(("silence", body))
        return body


def test_each_alert_shows_since_when_and_for_how_long() -> None:
    since = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    alert = {**ACTIVE[0], "since": since.isoformat()}
    rows = repr(render_active([alert], since.timestamp() + 3 * 3600 + 7 * 60))
    assert "2026-01-01 00:00:00 UTC" in rows
    assert "3 h 07 min" in rows
    assert "'alert-row-ack'" in rows
    assert "'7|m3'" in rows


def test_a_row_action_sends_the_operator_s_comment() -> None:
    ops = _Recorder()
    now = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)
    row_ack = {"type": "alert-row-ack", "index": "7|m3"}
    text = actions.alert_action(ops, row_ack, None, None, None, now, " on it: disk full ")  # type: ignore[arg-type]
    assert text == "m3 acknowledged"
    row_silence = {"type": "alert-row-silence", "index": "2|cluster"}
    actions.alert_action(ops, row_silence, None, "4 h", None, now, "maintenance")  # type: ignore[arg-type]
    assert ops.calls == [
        ("acknowledge", {"rule_id": 7, "target": "m3", "comment": "on it: disk full"}),
        (
            "silence",
            {
                "rule_id": 2,
                "target": "cluster",
                "until": "2026-01-01T07:00:00+00:00",
                "comment": "maintenance",
            },
        ),
    ]
    assert actions.ack_body("7|m3", "  ")["comment"] == "acknowledged in the console"  # type: ignore[index]


def test_history_filters_and_durations() -> None:
    from pushgrid.console.pages.alert_history import history_filters, render_history

    now = 1_767_229_200.0
    assert history_filters(None, "", None, "all", now) == {}
    assert history_filters(3, " m1 ", "resolved", "1 h", now) == {
        "rule_id": 3,
        "target": "m1",
        "state": "resolved",
        "since": "2026-01-01T00:00:00+00:00",
    }
    event = {
        "id": 9,
        "at": "2026-01-01T01:00:00+00:00",
        "state": "resolved",
        "rule": "Busy",
        "target": "m1",
        "summary": "Busy on m1 resolved",
        "duration": 600.0,
    }
    shown = repr(render_history([event, {**event, "id": 8, "duration": None}]))
    assert "10 min" in shown
    assert "—" in shown
