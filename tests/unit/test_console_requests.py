"""Issue 34 (2.10): unknown component files and unknown Dash callbacks answered 500 to anyone,
without a token, and logged ~26 lines each. Now 404 / 400, no log line (console/requests.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pushgrid.console.app import create_dash_app
from pushgrid.console.mount import ProviderCache
from pushgrid.console.requests import callback_error

CALLBACK = "/_dash-update-component"


@pytest.fixture(scope="module")
def console() -> Any:
    app = create_dash_app(ProviderCache("http://127.0.0.1:9"))
    return app


@pytest.mark.parametrize(
    "path",
    [
        "/_dash-component-suites/nope/x.js",
        "/_dash-component-suites/dash/nope.js",
        "/_dash-component-suites/dash/dcc/nope.v4_0_0m1.js",
    ],
)
def test_an_unknown_component_file_is_404_without_a_log_line(
    console: Any, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        answer = console.server.test_client().get(path)
    assert answer.status_code == 404
    assert answer.get_json()["code"] == "not_found"
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []


@pytest.mark.parametrize(
    "body",
    [
        {"output": "nope.children", "inputs": [], "changedPropIds": []},
        {"inputs": []},
        [1],
        "text",
        None,
    ],
)
def test_a_request_for_no_callback_is_400_without_a_log_line(
    console: Any, body: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        answer = console.server.test_client().post(CALLBACK, json=body)
    assert answer.status_code == 400, answer.data[:200]
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []


def test_a_callback_request_with_a_known_output_but_a_wrong_shape_is_400(console: Any) -> None:
    output = next(o for o, entry in console.callback_map.items() if "callback" in entry)
    answer = console.server.test_client().post(CALLBACK, json={"output": output, "inputs": {}})
    assert answer.status_code == 400
    assert "'inputs' must be a list" in answer.get_json()["title"]


def test_a_request_dash_refuses_later_is_400_with_one_log_line(
    console: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A known callback with an output spec of the wrong length: Dash's own validation."""
    output = next(
        o for o, entry in console.callback_map.items() if o.startswith("..") and "callback" in entry
    )
    body = {"output": output, "outputs": [], "inputs": [], "state": [], "changedPropIds": []}
    with caplog.at_level(logging.DEBUG):
        answer = console.server.test_client().post(CALLBACK, json=body)
    assert answer.status_code == 400, answer.data[:200]
    assert len([r for r in caplog.records if r.levelno >= logging.INFO]) == 1


def test_existing_component_files_are_still_served(console: Any) -> None:
    answer = console.server.test_client().get(
        "/_dash-component-suites/dash/deps/polyfill@7.12.1.min.js"
    )
    assert answer.status_code == 200


def test_a_single_output_request_as_the_renderer_sends_it_is_let_through(console: Any) -> None:
    """The renderer sends one output as an object, not a list: refusing that refused every
    single-output callback of the console (the alert banner on every page, found in Chromium)."""
    output = next(
        o
        for o, entry in console.callback_map.items()
        if not o.startswith("..") and "callback" in entry
    )
    component, prop = output.rsplit(".", 1)
    body = {
        "output": output,
        "outputs": {"id": component, "property": prop},
        "inputs": [],
        "state": [],
        "changedPropIds": [],
    }
    assert callback_error(console, body) is None


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


def test_a_request_naming_a_clientside_callback_is_400_without_a_log_line(
    console: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The renderer runs a clientside callback itself; Dash answered a request for one 500 with a
    traceback (KeyError: no function for the output)."""
    output = next(o for o, entry in console.callback_map.items() if "callback" not in entry)
    body = {"output": output, "outputs": [], "inputs": [], "state": [], "changedPropIds": []}
    with caplog.at_level(logging.DEBUG):
        answer = console.server.test_client().post(CALLBACK, json=body)
    assert answer.status_code == 400, answer.data[:200]
    assert answer.get_json()["code"] == "invalid_callback"
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []
