"""``pushgrid status``: how many processes serve each member, on which cores (docs/workers.md).

It reads the Workers MBean (``pushgrid:type=Workers``) of each member's Jolokia endpoint:
``--monitor URL`` (repeatable), else the member ``--config`` (or the defaults) describes, its
``MonitorHTTP.Listen`` and ``MonitorUsername`` / ``MonitorPassword``. Exit 1 when a member
cannot be read or one of its processes does not answer. The text is pure (:func:`member_text`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import httpx
import typer

from pushgrid.config.cli_support import settings_or_exit
from pushgrid.ops import names
from pushgrid.ops.workers import WorkerProcess

from .workers_text import member_text

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="The member's pushgrid.conf.")
]
MonitorOption = Annotated[
    list[str] | None,
    typer.Option(
        "--monitor",
        "-m",
        help="A member's monitoring URL (http://host:8900); repeat for several. "
        "Default: MonitorHTTP.Listen of --config.",
    ),
]


Login = tuple[str, str] | None


def _targets(config: Path | None, monitors: list[str] | None) -> tuple[list[str], Login]:
    if monitors:
        return [m.rstrip("/") for m in monitors], None
    settings = settings_or_exit(config).monitoring
    urls = []
    for host, port in settings.monitor_addresses:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        urls.append(f"http://{shown}:{port}")
    login = None
    if settings.monitor_username and settings.monitor_password:
        login = (settings.monitor_username, settings.monitor_password)
    return urls[:1], login


def read_processes(http: httpx.Client, url: str) -> tuple[str, list[WorkerProcess]]:
    """(the member's ServerName, its processes) from its Jolokia endpoint."""
    answer = http.post(
        f"{url}/jolokia",
        json=[
            {"type": "read", "mbean": names.SERVER, "attribute": "ServerName"},
            {"type": "read", "mbean": names.WORKERS, "attribute": "Processes"},
        ],
    )
    if answer.status_code != 200:
        raise httpx.HTTPError(
            f"HTTP {answer.status_code} from {url}/jolokia (is it a member's monitoring URL?)"
        )
    server, workers = answer.json()
    for part in (server, workers):
        if part.get("status") != 200:
            raise httpx.HTTPError(f"{part.get('error_type', 'error')}: {part.get('error', '')}")
    return str(server["value"]), [WorkerProcess.model_validate(r) for r in workers["value"]]


def status(
    config: ConfigOption = None,
    monitor: MonitorOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per member.")] = False,
) -> None:
    """Say how many processes serve each member and on which cores (its Workers MBean)."""
    urls, login = _targets(config, monitor)
    failed = False
    with httpx.Client(timeout=5.0, trust_env=False, auth=login) as http:
        for url in urls:
            try:
                name, processes = read_processes(http, url)
            except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
                typer.echo(f"{url}: cannot read its Workers MBean: {exc}", err=True)
                failed = True
                continue
            failed |= any(not p.answering or p.pid == 0 for p in processes)
            if as_json:
                rows = [p.as_dict() for p in processes]
                typer.echo(json.dumps({"member": name, "monitor": url, "processes": rows}))
            else:
                typer.echo(member_text(name, url, processes))
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``status`` command to ``app``."""
    app.command("status")(status)
