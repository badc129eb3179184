"""Whether what the console shows is current (issue 34, 4.1 and 4.6).

- A member that hangs is "not answering for N s" (the admin API's ``not_answering_seconds``).
- A page that polls marks itself *stale* when its last successful update is older than
  :data:`STALE_AFTER_MS`: the browser measures it (its own clock, when each update arrived), so
  a page whose server stopped answering says so instead of showing old numbers as current.
- When the console's own requests fail (the admin API, which serves the console, is stopped),
  ``assets/reach.js`` puts up a banner: "the console cannot reach the admin API".
"""

from __future__ import annotations

from typing import Final

from dash import Dash, Input, Output, State

STALE_AFTER_MS: Final = 5000  # five 1 s ticks without an update

# Input: the "updated" text changed (a successful round): remember when, in the browser.
ARRIVED = """
function(text) { return Date.now(); }
"""

# Each tick: how long ago the last update arrived; a text and a class when it is too long.
STALENESS = f"""
function(n, at) {{
    if (!at) {{ return ["", "stale-note"]; }}
    const age = Date.now() - at;
    if (age <= {STALE_AFTER_MS}) {{ return ["", "stale-note"]; }}
    return ["stale: no update for " + Math.round(age / 1000) + " s", "stale-note stale"];
}}
"""


def not_answering_text(seconds: float) -> str:
    """A hung member, as the admin API words it (admin_api/answering.py)."""
    return f"not answering for {int(seconds)} s"


def register_staleness(app: Dash, updated: str, arrived: str, stale: str, interval: str) -> None:
    """``stale`` (a span) says "stale: no update for N s" when ``updated`` (the page's
    "updated HH:MM:SS") has not changed for :data:`STALE_AFTER_MS`; ``arrived`` is a
    ``dcc.Store`` the browser keeps the arrival time in; ``interval`` the page's tick."""
    app.clientside_callback(  # type: ignore[no-untyped-call]
        ARRIVED, Output(arrived, "data"), Input(updated, "children"), prevent_initial_call=True
    )
    app.clientside_callback(  # type: ignore[no-untyped-call]
        STALENESS,
        Output(stale, "children"),
        Output(stale, "className"),
        Input(interval, "n_intervals"),
        State(arrived, "data"),
    )
