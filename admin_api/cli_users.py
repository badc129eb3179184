"""``pushgrid admin user ...``: console users who sign in with a password (ADR 052).

    pushgrid admin user add NAME --role viewer|operator|admin [--config FILE]
    pushgrid admin user passwd NAME [--config FILE]
    pushgrid admin user remove NAME [--config FILE]
    pushgrid admin user list [--config FILE]

The password is never an argument (it would sit in the shell's history and in ``ps``): it is
asked twice on a terminal, or read as the first line of standard input when that is not a
terminal (``printf '%s\\n' "$PW" | pushgrid admin user add ...``). Every change is audited in
the admin database's audit log (method ``CLI``, the system user as the actor), in the same
transaction as the change.

Exit codes: 0 done; 1 the database is unusable or the user is unknown / exists already;
2 a bad option, name or password.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from pushgrid.config.cli_support import fail, settings_or_exit

from .cli_store import ConfigOption
from .security import Role

if TYPE_CHECKING:
    from .services.audit import CliAudit
    from .services.users import UserService

T = TypeVar("T")

user_app = typer.Typer(
    name="user",
    help="Console users who sign in with a password: add, passwd, remove, list.",
    no_args_is_help=True,
    add_completion=False,
)

NameArgument = Annotated[str, typer.Argument(help="The user's name (letters, digits, ._@+-).")]


def read_password(name: str) -> str:
    """The new password: asked twice on a terminal, else the first line of standard input."""
    from .passwords import check_rules
    from .problems import ProblemError

    if sys.stdin.isatty():
        first = getpass.getpass(f"password for {name}: ")
        if getpass.getpass("again: ") != first:
            raise fail("the two passwords differ", 2)
        password = first
    else:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
        if not password:
            raise fail("no password on standard input (one line expected)", 2)
    try:
        check_rules(password, name)
    except ProblemError as exc:
        raise fail(exc.detail, 2) from None
    return password


def _name(name: str) -> str:
    from pydantic import TypeAdapter, ValidationError

    from .schemas_signin import UserName

    try:
        return TypeAdapter(UserName).validate_python(name)
    except ValidationError:
        raise fail(f"{name!r}: a user name is 1-64 letters, digits or ._@+-", 2) from None


def _database(config: Path | None) -> str:
    from .cli_store import migrate

    settings = settings_or_exit(config)
    migrate(settings.database)
    return settings.database


def _audit(command: str, action: str) -> CliAudit:
    from .services.audit import CliAudit

    return CliAudit(f"pushgrid admin user {command}", action, getpass.getuser())


def _run(url: str, change: Callable[[UserService], T]) -> T:
    """Run ``change(service)`` on the database; an API problem becomes a CLI error."""
    from pushgrid.metrics.sqlstore import session_scope

    from .problems import ProblemError
    from .services.users import UserService

    try:
        with session_scope(url) as db:
            return change(UserService(db))
    except ProblemError as exc:
        raise fail(exc.detail, 2 if exc.status == 422 else 1) from None


@user_app.command("add")
def add_command(
    name: NameArgument,
    role: Annotated[
        Role, typer.Option("--role", case_sensitive=False, help="viewer, operator or admin.")
    ],
    config: ConfigOption = None,
) -> None:
    """Create a console user (the password is asked, or read from standard input)."""
    name = _name(name)
    url = _database(config)
    password = read_password(name)
    audit = _audit("add", "users.create")
    _run(url, lambda users: users.create(name, role, password, "cli", audit=audit))
    typer.echo(f"created {role.value} user {name!r}", err=True)


@user_app.command("passwd")
def passwd_command(name: NameArgument, config: ConfigOption = None) -> None:
    """Set a user's password (clears a lockout, ends the user's sessions)."""
    name = _name(name)
    url = _database(config)
    password = read_password(name)
    audit = _audit("passwd", "users.passwd")
    ended = _run(url, lambda users: users.set_password(name, password, audit=audit))
    typer.echo(f"password of {name!r} changed; {ended} session(s) ended", err=True)


@user_app.command("remove")
def remove_command(name: NameArgument, config: ConfigOption = None) -> None:
    """Remove a console user (their sessions end at once)."""
    name = _name(name)
    url = _database(config)
    audit = _audit("remove", "users.remove")
    ended = _run(url, lambda users: users.remove(name, audit=audit))
    typer.echo(f"removed user {name!r}; {ended} session(s) ended", err=True)


@user_app.command("list")
def list_command(config: ConfigOption = None) -> None:
    """The console users: name, role, last sign-in, locked until."""
    url = _database(config)
    page = _run(url, lambda users: users.page())
    for user in page.items:
        last = user.last_sign_in_at.isoformat() if user.last_sign_in_at else "never"
        locked = f" locked until {user.locked_until.isoformat()}" if user.locked_until else ""
        typer.echo(f"{user.name}\t{user.role.value}\tlast sign-in {last}{locked}")
