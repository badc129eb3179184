"""Jobs: the statistics pipeline's runs with status and duration, the last run's stages; start
a run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.ops.api.jobs import JobRunOut

from .. import format as fmt
from ..components import alert, card, notice, page_header, pill, table
from ..figures import jobs_figure
from ..ids import Ids
from ..polling import paced
from ..provider import ProviderError
from . import OPERATOR_ONLY, ConsolePage, Providers

PATH = "jobs"
TITLE = "Jobs"
REFRESH_MS = 2000
_STATUS_KIND = {"succeeded": "good", "failed": "bad", "running": "info", "interrupted": "muted"}


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Runs of the statistics pipeline (compaction, rollups, windows)",
                html.Button(
                    "Start a run", id=Ids.JOBS_START, className=f"button primary {OPERATOR_ONLY}"
                ),
            ),
            html.Div(id=Ids.JOBS_ALERT, className="alerts"),
            html.Div(id=Ids.JOBS_RESULT, className="alerts"),
            card(
                [
                    html.Div("Duration of the last runs", className="card-title"),
                    dcc.Graph(
                        id=Ids.JOBS_GRAPH,
                        figure=jobs_figure([]),
                        config={"displayModeBar": False, "responsive": True},
                    ),
                ]
            ),
            card(html.Div(id=Ids.JOBS_TABLE, className="table-scroll"), class_name="flush"),
            dcc.ConfirmDialog(
                id=Ids.JOBS_CONFIRM,
                message="Start a run of the statistics pipeline now?",
            ),
            dcc.Store(id=Ids.JOBS_VERSION, data=0),
            dcc.Interval(id=Ids.JOBS_INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-jobs",
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def render_runs(runs: Sequence[JobRunOut], now: float) -> Component:
    rows: list[list[Any]] = []
    props: list[dict[str, Any]] = []
    for run in runs:
        running_for = None
        if run.status == "running":
            started = fmt.unix_of(run.started_at)
            running_for = None if started is None else max(0.0, now - started)
        rows.append(
            [
                f"#{run.id}",
                pill(run.status, _STATUS_KIND.get(run.status, "muted")),
                fmt.moment(run.started_at),
                fmt.duration(
                    run.duration_seconds if run.duration_seconds is not None else running_for
                )
                + (" so far" if run.status == "running" else ""),
                fmt.moment(run.as_of),
                fmt.count(run.input_rows),
                fmt.count(run.output_rows),
                html.Span(
                    (run.error or "").splitlines()[0][:120] if run.error else "",
                    title=run.error or "",
                    className="error-text",
                ),
            ]
        )
        props.append({"data-run": str(run.id), "data-status": run.status})
    return table(
        ["run", "status", "started", "duration", "as of", "rows in", "rows out", "error"],
        rows,
        row_props=props,
        empty="no runs yet: start one",
    )


def render_stages(runs: Sequence[JobRunOut]) -> Component:
    """The stages of the newest run (so far, if it is running): rows, duration, share."""
    if not runs:
        return html.Div()
    last = runs[0]
    state = "so far" if last.status == "running" else last.status
    title = html.Div(f"Stages of run #{last.id} ({state})", className="card-title")
    stages = last.stages or []
    if not stages:
        return html.Div([title, html.P("no stage recorded yet", className="muted")])
    total = sum(stage.seconds or 0.0 for stage in stages)
    rows = [
        [
            stage.name,
            fmt.count(stage.input_rows),
            fmt.count(stage.output_rows),
            fmt.duration(stage.seconds),
            f"{100 * (stage.seconds or 0.0) / total:.0f} %" if total > 0 else "-",
        ]
        for stage in stages
    ]
    props = [{"data-stage": stage.name} for stage in stages]
    return html.Div(
        [
            title,
            table(["stage", "rows in", "rows out", "duration", "share"], rows, row_props=props),
        ],
        className="job-stages",
    )


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.JOBS_TABLE, "children"),
        Output(Ids.JOBS_GRAPH, "figure"),
        Output(Ids.JOBS_ALERT, "children"),
        Input(Ids.JOBS_INTERVAL, "n_intervals"),
        Input(Ids.JOBS_VERSION, "data"),
        State(Ids.TOKEN, "data"),
        running=paced(Ids.JOBS_INTERVAL),
    )
    def listing(_n: int | None, _version: int, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        try:
            runs = provider.jobs(30)
        except ProviderError as exc:
            return no_update, no_update, alert([exc])
        listing = html.Div([render_stages(runs), render_runs(runs, time.time())])
        return listing, jobs_figure(runs), []

    @app.callback(
        Output(Ids.JOBS_CONFIRM, "displayed"),
        Input(Ids.JOBS_START, "n_clicks"),
        prevent_initial_call=True,
    )
    def ask(clicks: int | None) -> bool:
        return bool(clicks)

    @app.callback(
        Output(Ids.JOBS_VERSION, "data"),
        Output(Ids.JOBS_RESULT, "children"),
        Input(Ids.JOBS_CONFIRM, "submit_n_clicks"),
        State(Ids.JOBS_VERSION, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def start(_submit: int, version: int | None, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        try:
            run = provider.start_job()
        except ProviderError as exc:
            return no_update, alert([exc])
        return (version or 0) + 1, notice(f"run #{run.id} started ({run.status})", "success")


PAGE = ConsolePage(PATH, TITLE, "⚙", layout, group="Pipeline")
