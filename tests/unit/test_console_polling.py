"""Every console poll is paced by its answers (console/polling.py): a callback an interval
triggers turns that interval off while it runs, or arms one tick per answer (``max_intervals``).
Otherwise Dash drops every answer slower than the interval and the page stops updating."""

from __future__ import annotations

from typing import Any

from pushgrid.console.app import create_dash_app

#: polls that arm their next tick from their answer (their interval's ``max_intervals``)
ARMED_BY_THE_ANSWER = {"mtrace-interval", "history-interval"}


def _polls() -> list[tuple[str, dict[str, Any]]]:
    app = create_dash_app(lambda _token: None)  # type: ignore[arg-type, return-value]
    found = []
    for callback in app._callback_list:
        if callback["clientside_function"] is not None:
            continue  # runs in the browser at once: nothing to drop
        for given in callback["inputs"]:
            if given["property"] == "n_intervals":
                found.append((str(given["id"]), callback))
    return found


def test_the_console_has_its_polls() -> None:
    intervals = {interval for interval, _ in _polls()}
    assert {"subject-interval", "audit-interval", "alerts-interval"} <= intervals
    assert len(_polls()) >= 13


def test_every_poll_turns_its_interval_off_while_it_runs_or_arms_it_from_its_answer() -> None:
    for interval, callback in _polls():
        if interval in ARMED_BY_THE_ANSWER:
            outputs = callback["output"]
            assert f"{interval}.max_intervals" in outputs, (interval, outputs)
            continue
        running = callback.get("running") or {}
        assert running.get("running") == {f"{interval}.disabled": True}, (interval, callback)
        assert running.get("runningOff") == {f"{interval}.disabled": False}, interval
