"""``pushgrid console`` / ``python -m console``: run the console on its own.

    python -m console --api http://127.0.0.1:8080            # console at http://127.0.0.1:8050/console/
    python -m console --api http://admin:8080 --listen 0.0.0.0:8050
    python -m console --demo                                  # made-up data, no admin API needed

The admin API normally serves the console itself at ``/console/``; the standalone console is for
running it on another machine or port. It talks to the admin API only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from pushgrid.config import ConfigError, load_settings
from pushgrid.kernel.addresses import parse_address

DEFAULT_LISTEN = "127.0.0.1:8050"


def console(
    api: Annotated[
        str | None,
        typer.Option(
            "--api",
            help="Admin API base URL, e.g. http://127.0.0.1:8080 (default: from Admin.Listen).",
        ),
    ] = None,
    listen: Annotated[
        str, typer.Option("--listen", "-l", help="host:port the console listens on.")
    ] = DEFAULT_LISTEN,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", "-c", help="pushgrid.conf, for Admin.Listen when --api is not given."
        ),
    ] = None,
    demo: Annotated[
        bool, typer.Option("--demo", help="Made-up data instead of an admin API (development).")
    ] = False,
) -> None:
    """Run the ops console (Plotly Dash) on its own, talking to an admin API."""
    import uvicorn
    from a2wsgi import WSGIMiddleware

    from .mount import MOUNT_PATH, api_url_of, standalone_app

    try:
        host, port = parse_address(listen)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--listen") from None
    if demo:
        from .app import create_dash_app
        from .dev_provider import DemoProvider

        demo_provider = DemoProvider()
        dash_app = create_dash_app(
            lambda _token: demo_provider,
            requests_pathname_prefix=f"{MOUNT_PATH}/",
            routes_pathname_prefix=f"{MOUNT_PATH}/",
        )
        source = "made-up data (--demo): sign in with any token"
    else:
        if api is None:
            try:
                api = api_url_of(load_settings(config).admin)
            except ConfigError as exc:
                typer.echo(f"pushgrid: configuration error\n{exc}", err=True)
                raise typer.Exit(2) from None
        if not api.startswith(("http://", "https://")):
            raise typer.BadParameter(f"{api!r} is not an http(s) URL", param_hint="--api")
        dash_app = standalone_app(api)
        source = f"admin API {api}"
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    typer.echo(f"pushgrid console on http://{host}:{port}{MOUNT_PATH}/ ({source})")
    uvicorn.run(
        WSGIMiddleware(dash_app.server),
        host=host,
        port=port,
        log_level="warning",
    )


def register(app: typer.Typer) -> None:
    """Add the ``console`` command to the ``pushgrid`` app."""
    app.command("console")(console)


def main() -> None:
    typer.run(console)
