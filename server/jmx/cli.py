"""``pushgrid jmx``: run the JMX bridge of a member, query JMX, Nagios-style checks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from pushgrid.config import JmxSettings, Settings
from pushgrid.config.cli_support import fail, settings_or_exit
from pushgrid.kernel.jmxquery import JmxError, Reading, nest, query

from .bridge import BridgeError, BridgeLaunch, prepare, run, run_alongside
from .check import CheckStatus, Range, evaluate

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="pushgrid.conf of the member (MonitorHTTP.Listen, Monitor*, Jmx* keys).",
    ),
]
UrlArgument = Annotated[
    str, typer.Argument(help="JMX URL, e.g. service:jmx:rmi:///jndi/rmi://127.0.0.1:9010/jmxrmi")
]
PatternArgument = Annotated[
    list[str],
    typer.Argument(help="ObjectName patterns, optionally /Attribute: 'pushgrid:type=Indicator,*'"),
]
UserOption = Annotated[
    str | None,
    typer.Option(
        "--username",
        "-u",
        help="JMX user (default JmxUsername; the password is JmxPassword from --config or "
        "PUSHGRID_JMXPASSWORD, never an argument)",
    ),
]


def prepare_or_exit(settings: Settings, workdir: Path) -> BridgeLaunch:
    try:
        return prepare(settings.jmx, settings.monitoring, workdir)
    except BridgeError as exc:
        raise fail(f"JMX bridge: {exc}", 2) from None


@contextlib.contextmanager
def bridge_alongside(settings: Settings) -> Iterator[Coroutine[Any, Any, None]]:
    """For `pushgrid up --jmx`: prepare the bridge now (exit 2 naming the problem) and give the
    coroutine that runs it; its private files live until the context ends."""
    with tempfile.TemporaryDirectory(prefix="pushgrid-jmx-") as workdir:
        launch = prepare_or_exit(settings, Path(workdir))
        typer.echo(f"pushgrid: JMX bridge (jconsole, VisualVM) at {launch.jmx_url}")
        yield run_alongside(launch)


def _login(settings: JmxSettings, username: str | None) -> tuple[str | None, str | None]:
    return (username or settings.jmx_username), settings.jmx_password


JavaOption = Annotated[
    list[str] | None,
    typer.Option(
        "--java-option",
        "-J",
        help="Option for the query JVM, e.g. -J-Djavax.net.ssl.trustStore=ca.p12 for JmxTLS",
    ),
]


def _query_or_exit(
    url: str,
    patterns: list[str],
    settings: JmxSettings,
    username: str | None,
    unknown: int,
    java_options: list[str] | None = None,
) -> list[Reading]:
    user, password = _login(settings, username)
    options = java_options or []
    try:
        found = query(url, patterns, user, password, java=settings.jmx_java, java_options=options)
        return asyncio.run(found)
    except JmxError as exc:
        if unknown == CheckStatus.UNKNOWN:
            typer.echo(f"JMX UNKNOWN - {url}: {exc.message}")
            raise typer.Exit(unknown) from None
        raise fail(f"{url}: {exc.message}", unknown) from None


def register(app: typer.Typer) -> None:
    jmx = typer.Typer(
        help="JMX: run the bridge of a member (pushgrid jmx --config FILE), query, check.",
        invoke_without_command=True,
        no_args_is_help=False,
    )

    @jmx.callback()
    def bridge(ctx: typer.Context, config: ConfigOption = None) -> None:
        """Run the JMX bridge for the member FILE configures (Ctrl-C stops it)."""
        if ctx.invoked_subcommand is not None:
            return
        settings = settings_or_exit(config)
        with tempfile.TemporaryDirectory(prefix="pushgrid-jmx-") as workdir:
            launch = prepare_or_exit(settings, Path(workdir))
            typer.echo(f"pushgrid: JMX bridge for {launch.jolokia_url} at {launch.jmx_url}")
            code = run(launch)
        raise typer.Exit(code)

    @jmx.command("query")
    def query_command(
        url: UrlArgument,
        patterns: PatternArgument,
        config: ConfigOption = None,
        username: UserOption = None,
        java_option: JavaOption = None,
    ) -> None:
        """Print the values of the matching MBeans as JSON (one jmxquery JVM run)."""
        settings = settings_or_exit(config)
        readings = _query_or_exit(url, patterns, settings.jmx, username, 1, java_option)
        typer.echo(json.dumps(nest(readings), indent=2, sort_keys=True))

    @jmx.command("check")
    def check_command(
        url: UrlArgument,
        pattern: Annotated[str, typer.Argument(help="ObjectName pattern ('pushgrid:*')")],
        attribute: Annotated[str, typer.Option("--attribute", "-a", help="Attribute")],
        key: Annotated[
            str | None, typer.Option("--key", "-k", help="Key of a CompositeData attribute")
        ] = None,
        warn: Annotated[str | None, typer.Option("--warn", "-w", help="Nagios range")] = None,
        crit: Annotated[str | None, typer.Option("--crit", help="Nagios range")] = None,
        config: ConfigOption = None,
        username: UserOption = None,
        java_option: JavaOption = None,
    ) -> None:
        """Nagios-style check: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."""
        try:
            ranges = [None if text is None else Range.parse(text) for text in (warn, crit)]
        except ValueError as exc:
            typer.echo(f"JMX UNKNOWN - {exc}")
            raise typer.Exit(CheckStatus.UNKNOWN) from None
        settings = settings_or_exit(config)
        wanted = [f"{pattern}/{attribute}"]
        readings = _query_or_exit(url, wanted, settings.jmx, username, 3, java_option)
        chosen = [r for r in readings if r.attribute == attribute and r.key == key]
        outcome = evaluate(chosen, ranges[0], ranges[1])
        typer.echo(outcome.line)
        raise typer.Exit(int(outcome.status))

    app.add_typer(jmx, name="jmx")
