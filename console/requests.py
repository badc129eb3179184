"""Requests the console refuses before Dash sees them (issue 34).

Dash answers an unknown file under ``_dash-component-suites/`` (``DependencyException``) and a
callback request naming no callback (``KeyError``) or of the wrong shape (``AttributeError``)
with a 500 and a 26-line traceback each, to anyone, before any sign-in: a cheap way to fill the
log. Here an unknown file is a 404 and a callback request that names no registered callback or
is not shaped as the renderer sends it is a 400, each without a log line (the access log has
the request). A request Dash's own validation refuses later (an output spec of the wrong length,
say) is a 400 with one log line.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from dash.exceptions import DashException, DependencyException
from flask import Response, request

if TYPE_CHECKING:
    from dash import Dash

CALLBACK_PATH = "/_dash-update-component"
log = logging.getLogger(__name__)
_LISTS = ("inputs", "state", "changedPropIds")


def _problem(status: int, code: str, detail: str) -> Response:
    body = {"type": "about:blank", "title": detail, "status": status, "code": code}
    return Response(json.dumps(body), status, mimetype="application/problem+json")


def callback_error(app: Dash, body: Any) -> str | None:
    """Why ``body`` is not a request for one of ``app``'s callbacks (None: it is)."""
    if not isinstance(body, dict):
        return "a callback request is a JSON object"
    output = body.get("output")
    # a clientside callback is in the map without a function: the renderer runs it itself, so a
    # request naming it is no request of the renderer's (Dash answered it 500, KeyError)
    if not isinstance(output, str) or "callback" not in app.callback_map.get(output, {}):
        return "no such callback"
    for key in _LISTS:
        if key in body and not isinstance(body[key], list):
            return f"'{key}' must be a list"
    # the renderer sends one output as an object, several as a list of them
    if "outputs" in body and not isinstance(body["outputs"], list | dict):
        return "'outputs' must be an object or a list"
    return None


def refuse_bad_requests(app: Dash) -> None:
    """Install the 404 for unknown component files and the 400 for bad callback requests."""

    def unknown_file(_: DependencyException) -> Response:
        return _problem(404, "not_found", "no such console file")

    def check_callback() -> Response | None:
        if request.method != "POST" or not request.path.endswith(CALLBACK_PATH):
            return None
        reason = callback_error(app, request.get_json(silent=True))
        return None if reason is None else _problem(400, "invalid_callback", reason)

    def refused_by_dash(exc: DashException) -> Response:
        log.warning("console: %s %s refused: %s", request.method, request.path, exc)
        if request.path.endswith(CALLBACK_PATH):
            return _problem(400, "invalid_callback", "the callback request was refused")
        return _problem(500, "internal", "the console could not answer")

    app.server.register_error_handler(DependencyException, unknown_file)
    app.server.register_error_handler(DashException, refused_by_dash)
    app.server.before_request(check_callback)
