"""``pushgrid admin ...``: run the admin API, create API tokens.

``pushgrid/cli/main.py`` calls :func:`register` to add the command group:

    pushgrid admin [--config FILE] [--listen HOST:PORT] [--bootstrap]     (= serve)
    pushgrid admin serve [--config FILE] [--listen HOST:PORT] [--bootstrap]
    pushgrid admin create-token --role viewer|operator|admin [--name NAME] [--expires-in SECONDS]
                                [--config FILE]
    pushgrid admin export-rules [--output FILE] [--config FILE]
    pushgrid admin user add|passwd|remove|list ...     (console users: admin_api/cli_users.py)

Both apply the database migrations first (``Database`` setting). ``--bootstrap`` creates and
prints an admin token when the database has no active one (what ``make up`` / ``pushgrid up``
use to hand out the first token). :func:`run_alongside` runs the admin API as a child process of
``pushgrid up``.

Exit codes: 0 done; 1 the database is unusable or the listener cannot be opened; 2 bad option or
configuration.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pushgrid.config.cli_support import LogLevelOption, fail, name_process, settings_or_exit
from pushgrid.kernel.periodic import die_with_parent, run_child

from .cli_store import ConfigOption
from .cli_store import migrate as _migrate
from .cli_users import user_app
from .security import Role

if TYPE_CHECKING:
    pass

admin_app = typer.Typer(
    name="admin",
    help="The admin API (FastAPI, /api/v1): run it, create API tokens.",
    invoke_without_command=True,
    add_completion=False,
)

ListenOption = Annotated[
    str | None,
    typer.Option(
        "--listen",
        metavar="HOST:PORT",
        help="Listen here instead of Admin.Listen (default 127.0.0.1:8080).",
    ),
]
BootstrapOption = Annotated[
    bool,
    typer.Option(
        "--bootstrap",
        help="Create and print an admin token when the database has no active one.",
    ),
]


admin_app.add_typer(user_app, name="user")  # console users (ADR 052)


def register(app: typer.Typer) -> None:
    """Add the ``admin`` command group to the ``pushgrid`` app."""
    app.add_typer(admin_app, name="admin")


def _create_token(
    url: str,
    role: Role,
    name: str,
    expires_in: float | None = None,
    command: str = "pushgrid admin create-token",
) -> tuple[str, str]:
    """(token id, token) of a new token in the database at ``url``, audited as ``command``."""
    import getpass

    from pushgrid.metrics.sqlstore import session_scope

    from .services.audit import CliAudit
    from .services.tokens import TokenService

    audit = CliAudit(command, "tokens.create", getpass.getuser())
    with session_scope(url) as db:
        created = TokenService(db).create(
            name, role, created_by="cli", expires_in=expires_in, audit=audit
        )
    return created.id, created.token


def _bootstrap_token(url: str) -> str | None:
    """A new admin token when the database has no active one, else None."""
    from pushgrid.metrics.sqlstore import session_scope

    from .services.tokens import TokenService

    with session_scope(url) as db:
        if TokenService(db).has_active(Role.ADMIN):
            return None
    command = "pushgrid admin serve --bootstrap"
    return _create_token(url, Role.ADMIN, "bootstrap-admin", command=command)[1]


def serve(config: Path | None, listen: str | None = None, bootstrap: bool = False) -> None:
    """Migrate the database and run the admin API with uvicorn until interrupted."""
    import logging

    import uvicorn

    from pushgrid.kernel.addresses import parse_address

    from .main import DOCS_URL, create_app

    settings = settings_or_exit(config)
    try:
        host, port = parse_address(listen or settings.admin_listen)
    except ValueError as exc:
        raise fail(f"--listen: {exc}", 2) from None
    name_process(f"admin {host}:{port}", "admin")
    logging.basicConfig(
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # quiet by default: httpx logs every member call at INFO, uvicorn every request and its own
    # start-up and shutdown steps (the lines above say where the API is); LogLevel DEBUG shows
    # uvicorn's lines and its access log
    quiet = max(logging.WARNING, logging.getLogger().level)
    logging.getLogger("httpx").setLevel(quiet)
    uvicorn_level = "debug" if settings.log_level == "DEBUG" else logging.getLevelName(quiet)
    _migrate(settings.database)
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{shown_host}:{port}"
    lines = [f"pushgrid admin API on {base}/api/v1 (docs: {base}{DOCS_URL})"]
    if bootstrap:
        token = _bootstrap_token(settings.database)
        if token is None:
            lines.append(
                "  admin tokens exist; a new one: pushgrid admin create-token --role admin"
            )
        else:
            lines += [
                f"  first admin token (shown once): {token}",
                f"  try: curl -H 'Authorization: Bearer {token}' {base}/api/v1/members",
            ]
    lines.append(
        f"  console: {base}/console/ (sign in with an API token, or as a user: "
        "pushgrid admin user add NAME --role admin)"
    )
    typer.echo("\n".join(lines))
    from pushgrid.console.mount import mount_console

    app = create_app(settings)
    mount_console(app, settings.admin, api_url=base, signin=settings.signin)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level=uvicorn_level.lower(),
            access_log=settings.log_level == "DEBUG",
            proxy_headers=False,
            server_header=False,
        )
    except OSError as exc:
        raise fail(f"admin API cannot start: {exc}") from None


@admin_app.callback()
def _admin(
    ctx: typer.Context,
    config: ConfigOption = None,
    listen: ListenOption = None,
    bootstrap: BootstrapOption = False,
) -> None:
    """Run the admin API (same as `pushgrid admin serve`) unless a command is given."""
    ctx.obj = config
    if ctx.invoked_subcommand is None:
        serve(config, listen, bootstrap)


@admin_app.command("serve")
def serve_command(
    ctx: typer.Context,
    config: ConfigOption = None,
    listen: ListenOption = None,
    bootstrap: BootstrapOption = False,
    log_level: LogLevelOption = None,
) -> None:
    """Run the admin API (uvicorn, Admin.Listen, default 127.0.0.1:8080)."""
    serve(config or ctx.obj, listen, bootstrap)


@admin_app.command("create-token")
def create_token_command(
    ctx: typer.Context,
    role: Annotated[
        Role, typer.Option("--role", case_sensitive=False, help="viewer, operator or admin.")
    ],
    name: Annotated[
        str | None,
        typer.Option("--name", help="What the token is for (default: cli-<role>)."),
    ] = None,
    expires_in: Annotated[
        int | None,
        typer.Option(
            "--expires-in", min=60, help="Seconds until the token expires (default: never)."
        ),
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Create an API token and print it (once: only its hash is stored)."""
    settings = settings_or_exit(config or ctx.obj)
    token_name = (name or f"cli-{role.value}").strip()
    if not token_name or len(token_name) > 128:
        raise fail("--name must be 1 to 128 characters", 2)
    _migrate(settings.database)
    token_id, token = _create_token(settings.database, role, token_name, expires_in)
    typer.echo(
        f"created {role.value} token {token_name!r} (id {token_id}); it is shown only now:",
        err=True,
    )
    typer.echo(token)


def admin_argv(config: Path | None = None, bootstrap: bool = True) -> list[str]:
    """The command that runs the admin API in a child process."""
    argv = [sys.executable, "-m", "pushgrid", "admin", "serve"]
    if config is not None:
        argv += ["--config", str(config)]
    if bootstrap:
        argv.append("--bootstrap")
    return argv


async def run_alongside(config: Path | None = None, env: dict[str, str] | None = None) -> int:
    """Run the admin API as a child process until it exits (its exit code) or is cancelled (for
    ``pushgrid up``, which restarts it: pushgrid/kernel/periodic.py ``supervised``).

    Its output goes to this terminal (so the first admin token is seen); cancelling terminates
    the child.
    """
    return await run_child(admin_argv(config), env=env, preexec=die_with_parent, own_session=True)


@admin_app.command("export-rules")
def export_rules_command(
    ctx: typer.Context,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the rules file here (default: stdout)."),
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Write the enabled alert rules as a Prometheus rules file (promtool check rules)."""
    from pushgrid.metrics.sqlstore import session_scope

    from .rules_export import prometheus_rules
    from .services.alerts import RuleService

    settings = settings_or_exit(config or ctx.obj)
    _migrate(settings.database)
    with session_scope(settings.database) as db:
        rules = RuleService(db).all()
    text = prometheus_rules(rules)
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"{output}: cannot write the rules file: {exc.strerror}") from None
    enabled = sum(1 for rule in rules if rule.enabled)
    typer.echo(f"wrote {enabled} alert rules to {output}", err=True)
