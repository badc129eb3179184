"""The console's refusal of bad callback requests lets the renderer's own through (a callback
with one output sends ``outputs`` as one object: the alert banner's was refused with 400 every
few seconds, on every page)."""

from __future__ import annotations

from pushgrid.console.app import create_dash_app
from pushgrid.console.requests import callback_error


def test_a_single_output_callback_request_is_accepted() -> None:
    app = create_dash_app(lambda token: None)  # type: ignore[arg-type, return-value]
    body = {
        "output": "alert-banner.children",
        "outputs": {"id": "alert-banner", "property": "children"},
        "inputs": [{"id": "alert-banner-interval", "property": "n_intervals", "value": 1}],
        "changedPropIds": ["alert-banner-interval.n_intervals"],
        "state": [{"id": "token", "property": "data", "value": None}],
    }
    assert callback_error(app, body) is None
    assert callback_error(app, {**body, "inputs": {"id": "x"}}) == "'inputs' must be a list"
    assert callback_error(app, {**body, "output": "nothing.children"}) == "no such callback"
