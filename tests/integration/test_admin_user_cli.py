"""``pushgrid admin user add|passwd|remove|list`` as real processes (issue 35 item 5, ADR 052):
the password comes from standard input (never an argument), is stored as argon2id, every change
is in the audit log with the system user, and bad input gets a clear message and exit 2."""

from __future__ import annotations

import getpass
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, text

from .pgtest import clean_env, write_conf

PUSHGRID = [sys.executable, "-m", "pushgrid"]
PASSWORD = "a long enough password"


def user(
    *args: str, conf: Path, stdin: str = "", timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PUSHGRID, "admin", "user", *args, "--config", str(conf)],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env=clean_env(),
        cwd=conf.parent,
        check=False,
    )


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    engine = create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(sql))]
    finally:
        engine.dispose()


def test_users_are_added_changed_and_removed_with_audit_entries(tmp_path: Path) -> None:
    db = tmp_path / "admin.db"
    conf = write_conf(tmp_path / "pushgrid.conf", {"Database": f"sqlite:///{db}"})
    added = user("add", "olivia", "--role", "operator", conf=conf, stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    assert "created operator user 'olivia'" in added.stderr
    ((stored,),) = rows(db, "SELECT password_hash FROM admin_users WHERE name = 'olivia'")
    assert str(stored).startswith("$argon2id$")
    assert PASSWORD not in str(stored)

    again = user("add", "olivia", "--role", "admin", conf=conf, stdin=PASSWORD + "\n")
    assert (again.returncode, again.stderr.strip()) == (
        1,
        "pushgrid: console user 'olivia' exists already",
    )
    changed = user("passwd", "olivia", conf=conf, stdin=PASSWORD + " two\n")
    assert changed.returncode == 0, changed.stderr
    listed = user("list", conf=conf)
    assert listed.stdout.startswith("olivia\toperator\tlast sign-in never")
    removed = user("remove", "olivia", conf=conf)
    assert removed.returncode == 0, removed.stderr
    assert rows(db, "SELECT name FROM admin_users") == []

    audit = rows(db, "SELECT actor, method, path, action, target FROM admin_audit ORDER BY id")
    me = f"{getpass.getuser()} (cli)"
    assert audit == [
        (me, "CLI", "pushgrid admin user add", "users.create", "olivia"),
        (me, "CLI", "pushgrid admin user passwd", "users.passwd", "olivia"),
        (me, "CLI", "pushgrid admin user remove", "users.remove", "olivia"),
    ]


def test_bad_input_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    db = tmp_path / "admin.db"
    conf = write_conf(tmp_path / "pushgrid.conf", {"Database": f"sqlite:///{db}"})
    weak = user("add", "olivia", "--role", "viewer", conf=conf, stdin="short\n")
    assert (weak.returncode, weak.stderr.strip()) == (
        2,
        "pushgrid: the password must have at least 12 characters",
    )
    empty = user("add", "olivia", "--role", "viewer", conf=conf, stdin="")
    assert empty.returncode == 2
    assert "no password on standard input" in empty.stderr
    bad_name = user("add", "o livia", "--role", "viewer", conf=conf, stdin=PASSWORD + "\n")
    assert bad_name.returncode == 2
    assert "a user name is 1-64 letters" in bad_name.stderr
    bad_role = user("add", "olivia", "--role", "root", conf=conf, stdin=PASSWORD + "\n")
    assert bad_role.returncode == 2
    assert "--role" in bad_role.stderr
    # the password is no option: an attempt to pass one is a usage error, not a user
    argv = user("add", "olivia", "--role", "viewer", "--password", PASSWORD, conf=conf)
    assert argv.returncode == 2
    assert "No such option" in argv.stderr
    unknown = user("remove", "nobody", conf=conf)
    assert (unknown.returncode, unknown.stderr.strip()) == (1, "pushgrid: no console user 'nobody'")
    assert rows(db, "SELECT name FROM admin_users") == []
