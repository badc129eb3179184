"""The ``pushgrid`` command line (Typer)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import sys
from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import uvloop

from pushgrid import __version__
from pushgrid.config import Settings
from pushgrid.config.cli_support import LogLevelOption, choice, fail, name_process, settings_or_exit
from pushgrid.kernel.redaction import redact_text

from . import allocator
from .extras import extra_for, install_hint, missing_modules
from .workers import serve_workers, show_board, up_workers, worker_count

if TYPE_CHECKING:  # the server is imported only by the commands that run one
    from pushgrid.server.app import PushServer
    from pushgrid.server.engine.base import Engine
    from pushgrid.server.monitoring.supervision_board import SupervisionBoard
    from pushgrid.server.workers.supervisor import WorkerPlan

app = typer.Typer(
    name="pushgrid",
    help="pushgrid: real-time push server, clients and ops tools.",
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pushgrid {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """pushgrid command line."""


ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="pushgrid.conf file (Key = value lines)."),
]


def _settings(config: Path | None) -> Settings:
    settings = settings_or_exit(config)
    logging.basicConfig(
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # httpx logs every request at INFO (a member asks its NATS node once a second)
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))
    return settings


def _run(
    server: PushServer,
    on_started: Callable[[PushServer], None] | None = None,
    background: list[Coroutine[Any, Any, None]] | None = None,
    children: str = "",
    watchers: list[Coroutine[Any, Any, None]] | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT; then stop the ``watchers`` (the admin API: it would report
    the members going away as down), the server, and the ``background`` jobs, waiting until
    each has ended (``children`` names them all for the lines saying so)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        watching = [loop.create_task(job) for job in watchers or []]
        tasks = [loop.create_task(job) for job in background or []]

        async def stop_watchers() -> None:
            if children:
                typer.echo(f"pushgrid up: stopping {children}")
            await _cancelled(watching)

        try:
            await server.serve_forever(on_started, stop_watchers)
        finally:
            await _cancelled(watching + tasks)
            if children:
                typer.echo("pushgrid up: stopped")

    from pushgrid.server.cluster.errors import ClusterError

    try:
        uvloop.run(main())
    except (OSError, ClusterError) as exc:
        typer.echo(f"pushgrid: cannot start: {exc}", err=True)
        raise typer.Exit(1) from None


async def _cancelled(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait until each has ended (a child process stopped)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _push_server(
    settings: Settings, engine: Engine | None = None, worker: WorkerPlan | None = None
) -> PushServer:
    """The server (``worker``: one worker process of it, over ``engine``), or exit 2 when its
    entitlement plug-in cannot be loaded or a file it names (TLS certificate, key) is unusable."""
    from pushgrid.config import ConfigError
    from pushgrid.server.app import PushServer
    from pushgrid.server.core.custom_entitlement import PluginError

    try:
        return PushServer(settings, engine, worker)
    except (PluginError, ConfigError) as exc:
        raise fail(f"configuration error\n{exc}", 2) from None


@app.command()
def server(config: ConfigOption = None, log_level: LogLevelOption = None) -> None:
    """Run a push server (WebSocket + HTTP on the client port)."""
    settings = _settings(config)
    allocator.apply(settings.server.allocator)  # may re-execute: the title is set after it
    title = _member_title("server", settings)
    name_process(title, settings.server_name)
    count = worker_count(settings)
    if count > 1:  # one server on several processes (docs/workers.md)
        serve_workers(settings, count, partial(_run_worker, settings, title))
    _run(_push_server(settings))


def _run_worker(
    settings: Settings,
    title: str,
    plan: WorkerPlan,
    board: SupervisionBoard,
    serve: Callable[[PushServer], None] | None = None,
) -> int:
    """In a forked worker (``Workers`` > 1): one PushServer over the workers' engine, until
    SIGTERM; its exit code. Worker 0's Workers MBean reads the supervisor's ``board``; worker 0
    runs its server with ``serve`` when given (`pushgrid up`: the admin API beside it)."""
    from pushgrid.server.monitoring.supervision_board import silent_for
    from pushgrid.server.workers.engine import WorkersEngine

    name_process(
        f"{title} worker {plan.index}/{plan.workers}", f"{settings.server_name}/{plan.index}"
    )
    inner, cluster = _worker_engine(settings, plan)
    engine = WorkersEngine(
        inner,
        plan.token,
        plan.index,
        plan.workers,
        # a clustered publish may wait ClusterPublishTimeout for the stream: the ask waits too
        ask_timeout=5.0 + (settings.cluster.cluster_publish_timeout if cluster else 0.0),
        silent=partial(silent_for, board),
        cluster=cluster,
    )
    try:
        push_server = _push_server(settings, engine, plan)
        if plan.index == 0:
            show_board(push_server, board)
        (serve if serve is not None and plan.index == 0 else _run)(push_server)
    except typer.Exit as exc:
        return int(exc.exit_code)
    return 0


def _worker_engine(settings: Settings, plan: WorkerPlan) -> tuple[Engine, tuple[str, str] | None]:
    """Worker ``plan.index``'s own engine, and with a cluster engine its (name, delivery mode).

    Memory engine: each worker owns its share of the subjects (ADR 044). Cluster engine
    (ADR 067): worker 0's engine is the member's cluster engine (one NATS connection, one
    membership) and owns every subject; the others own none (an empty memory engine)."""
    from pushgrid.server.engine.limits import EngineLimits
    from pushgrid.server.engine.memory import MemoryEngine
    from pushgrid.server.engine.registry import build_engine
    from pushgrid.server.workers.ownership import worker_limits

    cluster = settings.cluster
    if cluster.engine_name == "memory":
        limits = EngineLimits.from_settings(settings.engine_limits)
        return MemoryEngine(worker_limits(limits, plan.workers, plan.index)), None
    mode = cluster.cluster_delivery_mode.lower()
    if plan.index == 0:
        return build_engine(settings.engine_limits, cluster, settings.server_name), ("nats", mode)
    return MemoryEngine(EngineLimits.from_settings(settings.engine_limits)), ("nats", mode)


def _member_title(command: str, settings: Settings) -> str:
    """``server m2 127.0.0.1:8801``: the command, the member's name and its client port."""
    return " ".join([command, settings.server_name, *settings.listen[:1]])


DELIVERY_MODES = ("Guaranteed", "Standard")  # the ClusterDeliveryMode key's values


@app.command()
def up(
    config: ConfigOption = None,
    members: Annotated[
        int,
        typer.Option(
            "--members",
            min=1,
            max=9,
            help="Run a local cluster of this many members (3+ for Guaranteed; docs/cluster.md).",
        ),
    ] = 1,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="Cluster delivery mode: Guaranteed or Standard.",
            callback=lambda value: choice("--mode", value, DELIVERY_MODES),
        ),
    ] = "Guaranteed",
    jmx: Annotated[
        bool, typer.Option("--jmx", help="Also run the JMX bridge on JmxListen (needs java).")
    ] = False,
    log_level: LogLevelOption = None,
) -> None:
    """Run pushgrid on embedded defaults and print how to use it (what `make up` runs)."""
    settings = _settings(config)
    _require_extras(("admin", "stats") if settings.stats_interval > 0 else ("admin",))
    allocator.apply(settings.server.allocator)
    admin_env: dict[str, str] = {}
    children: list[Coroutine[Any, Any, None]] = []
    if members > 1:
        settings, admin_env, children = _local_cluster(config, settings, members, mode)
    title = _member_title("up", settings)
    name_process(title, settings.server_name)

    def banner(server: PushServer) -> None:
        host, port = settings.listen_addresses[0] if settings.listen else ("127.0.0.1", 8800)
        host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        subject = "/Stocks/NYSE/IBM"
        exe = "pushgrid"
        typer.echo(
            "\n".join(
                [
                    "",
                    f"pushgrid {__version__} is up (engine: {server.engine.name}"
                    + (f", {members} members, {mode}" if members > 1 else "")
                    + _processes_text(server)
                    + ")",
                    *(
                        f"  member m{i}                ws://{host}:{port + i - 1}/ws"
                        for i in range(2, members + 1)
                    ),
                    f"  push server (WebSocket)  ws://{host}:{port}/ws",
                    f"  health                   http://{host}:{port}/health",
                    f"  admin API                http://{settings.admin_listen}/api/docs",
                    f"  ops console              http://{settings.admin_listen}/console/",
                    *(
                        f"  monitoring               http://{address}/jolokia  /stats  /metrics"
                        for address in server.monitor_addresses()
                    ),
                    "",
                    "Try it from another terminal (. .venv/bin/activate first):",
                    f"  {exe} subscribe {subject} --server {host}:{port}",
                    f"  {exe} publish {subject} 193 --field volume=6.62M --server {host}:{port}",
                    f"  curl 'http://{host}:{port}/snapshot?subject={subject}'",
                    "",
                    *(
                        [
                            f"Statistics pipeline: every {settings.stats_interval:g} s into "
                            f"{redact_text(settings.database)} (log: data/logs/stats.log;"
                            " pushgrid stats status)",
                        ]
                        if settings.stats_interval > 0
                        else []
                    ),
                    "Ctrl-C stops everything.",
                ]
            ),
            err=False,
        )

    def serve(push_server: PushServer) -> None:  # the whole of `up` around one server
        _up_around(push_server, settings, config, members, jmx, admin_env, children, banner)

    workers = up_workers(config, settings, members)
    if workers > 1:  # the supervisor forks; worker 0 runs the admin API and the rest too
        serve_workers(settings, workers, partial(_run_worker, settings, title, serve=serve))
    serve(_push_server(settings))


def _processes_text(server: PushServer) -> str:
    """``, 2 worker processes`` (Workers > 1; ``pushgrid status`` says on which cores)."""
    plan = server.worker
    return "" if plan is None or plan.workers == 1 else f", {plan.workers} worker processes"


def _up_around(
    push_server: PushServer,
    settings: Settings,
    config: Path | None,
    members: int,
    jmx: bool,
    admin_env: dict[str, str],
    children: list[Coroutine[Any, Any, None]],
    banner: Callable[[PushServer], None],
) -> None:
    """Serve ``push_server`` with what `up` runs beside it: the admin API, the other local
    members, the statistics run, the JMX bridge."""
    from pushgrid.admin_api.cli import run_alongside
    from pushgrid.kernel.periodic import run_periodically, supervised
    from pushgrid.server.jmx.cli import bridge_alongside

    with contextlib.ExitStack() as stack:
        # The bridge is prepared first: a problem (no java, no credentials) stops `up` at once.
        background = [stack.enter_context(bridge_alongside(settings))] if jmx else []
        # a child that exits is said (WARNING) and restarted with a back-off (ADR 027)
        admin = supervised("admin API", partial(run_alongside, config, admin_env))
        background += children
        if settings.stats_interval > 0:
            stats = [sys.executable, "-m", "pushgrid", "stats", "run"]
            if config is not None:
                stats += ["--config", str(config)]
            log_path = Path("data/logs/stats.log")
            background.append(run_periodically(stats, settings.stats_interval, log_path))
        names = ["the admin API", *(f"member m{i}" for i in range(2, members + 1))]
        names += ["the statistics run"] if settings.stats_interval > 0 else []
        names += ["the JMX bridge"] if jmx else []
        _run(push_server, banner, background, ", ".join(names), [admin])


def _require_extras(extras: tuple[str, ...]) -> None:
    """Exit 2 naming the extra before anything starts, when a role `up` runs is not installed."""
    for extra in extras:
        missing = missing_modules(extra)
        if missing:
            raise fail(install_hint(extra, missing[0]), 2)


def _local_cluster(
    config: Path | None, settings: Settings, count: int, mode: str
) -> tuple[Settings, dict[str, str], list[Coroutine[Any, Any, None]]]:
    """Member 1's settings, the admin API's environment and the other members' runners."""
    import os

    from pushgrid.config import ConfigError, load_settings
    from pushgrid.kernel.periodic import supervised
    from pushgrid.server.cluster.local import (
        admin_members,
        as_environment,
        member_overrides,
        run_member,
    )

    environ = dict(os.environ)
    try:
        first = load_settings(
            config,
            environ={**environ, **as_environment(member_overrides(settings, count, 1, mode))},
        )
    except ConfigError as exc:
        raise fail(f"configuration error\n{exc}", 2) from None
    children = [
        supervised(
            f"member m{index}",
            partial(
                run_member,
                config,
                as_environment(member_overrides(settings, count, index, mode)),
                Path(f"data/logs/member-{index}.log"),
                environ,
            ),
            Path(f"data/logs/member-{index}.log"),
        )
        for index in range(2, count + 1)
    ]
    admin_env = {"PUSHGRID_ADMIN_MEMBERS": admin_members(settings, count)}
    return first, admin_env, children


#: the commands each part adds to the command line, by their first word. A command line imports
#: only the part it runs: a server start does not import the admin API, the clients, the
#: pipeline, RRD and JMX (about 0.5 s of CPU at every start; ``python -X importtime``).
PART_COMMANDS: dict[str, str] = {
    "publish": "pushgrid.client.cli",
    "subscribe": "pushgrid.client.cli",
    "db": "pushgrid.spark_stats.cli",
    "stats": "pushgrid.spark_stats.cli",
    "admin": "pushgrid.admin_api.cli",
    "console": "pushgrid.console.cli",
    "rrd": "pushgrid.server.rrd_cli",
    "jmx": "pushgrid.server.jmx.cli",
    "status": "pushgrid.cli.status",
}
_registered: set[str] = set()


def command_line(argv: list[str] | None = None) -> typer.Typer:
    """The command line with the parts ``argv`` needs registered: the part of its first word,
    none for this module's own commands (``server``, ``up``), every part otherwise (help, a
    mistyped command: Click lists or suggests every command). ``None``: every part."""
    first = next((arg for arg in argv or () if not arg.startswith("-")), None)
    own = {info.name or info.callback.__name__ for info in app.registered_commands if info.callback}
    if argv is not None and first in own:
        modules: list[str] = []
    elif argv is not None and first in PART_COMMANDS:
        modules = [PART_COMMANDS[first]]
    else:
        modules = list(dict.fromkeys(PART_COMMANDS.values()))
    for module in modules:
        if module not in _registered:
            _registered.add(module)
            importlib.import_module(module).register(app)
    return app


def main() -> None:
    try:
        command_line(sys.argv[1:])()
    except ModuleNotFoundError as exc:
        # A command of an ops role run from a base install: name the extra, not a traceback.
        extra = extra_for(exc.name, sys.argv[1:])
        if extra is None:
            raise
        typer.echo(f"pushgrid: {install_hint(extra, exc.name or '?')}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
