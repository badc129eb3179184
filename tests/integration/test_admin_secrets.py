"""Secrets of the admin API at rest (issue 22 item 5): registered members' passwords are
encrypted in the store (admin.db held them in clear, mode 0644), the store and the key file are
0600, and API tokens may expire."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pushgrid.admin_api.main import create_app

from .pgtest import AdminHarness, ServerProcess, assert_problem

API = "/api/v1"
PASSWORD = "member-pw-not-in-the-db-0123"


def _stored_password(db: Path, name: str) -> str:
    with sqlite3.connect(db) as raw:
        (value,) = raw.execute(
            "SELECT password FROM admin_members WHERE name = ?", (name,)
        ).fetchone()
    return str(value)


async def test_member_passwords_are_encrypted_at_rest_and_still_work(
    tmp_path: Path, server_factory: Callable[..., ServerProcess]
) -> None:
    push = server_factory(ServerName="locked", MonitorUsername="mon", MonitorPassword=PASSWORD)
    old_umask = os.umask(0o022)
    try:
        admin = AdminHarness(tmp_path / "admin", [])
    finally:
        os.umask(old_umask)
    try:
        assert stat.S_IMODE(admin.db_path.stat().st_mode) == 0o600
        async with admin.client("admin") as api:
            body = {
                "name": "locked",
                "monitor_url": push.monitor_url,
                "username": "mon",
                "password": PASSWORD,
            }
            assert (await api.post(f"{API}/members", json=body)).status_code == 201
            stored = _stored_password(admin.db_path, "locked")
            assert stored.startswith("fernet:")
            assert PASSWORD not in stored
            assert PASSWORD.encode() not in admin.db_path.read_bytes()
            key_file = admin.workdir / "admin-secret.key"
            assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
            member = (await api.get(f"{API}/members/locked")).json()
            assert member["reachable"] is True, member  # the member got the real password
            assert member["has_credentials"] is True
    finally:
        admin.close()


async def test_passwords_stored_in_clear_before_are_encrypted_at_start(tmp_path: Path) -> None:
    admin = AdminHarness(tmp_path / "admin", [])
    try:
        with sqlite3.connect(admin.db_path) as raw:
            raw.execute(
                "INSERT INTO admin_members (name, monitor_url, username, password, created_at) "
                "VALUES ('old', 'http://127.0.0.1:9', 'mon', ?, '2026-01-01 00:00:00+00:00')",
                (PASSWORD,),
            )
        create_app(admin.settings, admin.session_factory, admin.job_runner)
        assert _stored_password(admin.db_path, "old").startswith("fernet:")
        async with admin.client("admin") as api:
            listed = (await api.get(f"{API}/members")).json()["items"]
            assert [m["has_credentials"] for m in listed if m["name"] == "old"] == [True]
    finally:
        admin.close()


async def test_tokens_may_expire(tmp_path: Path) -> None:
    admin = AdminHarness(tmp_path / "admin", [])
    try:
        async with admin.client("admin") as api:
            created = await api.post(
                f"{API}/tokens", json={"name": "short", "role": "viewer", "expires_in": 3600}
            )
            assert created.status_code == 201, created.text
            made = created.json()
            expires = datetime.fromisoformat(made["expires_at"])
            assert timedelta(minutes=59) < expires - datetime.now(UTC) <= timedelta(hours=1)
            assert made["expired"] is False
            mine = {"authorization": f"Bearer {made['token']}"}
            assert (await api.get(f"{API}/me", headers=mine)).status_code == 200
            # its expiry passes (set in the store rather than waited for)
            past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat(" ")
            with sqlite3.connect(admin.db_path) as raw:
                raw.execute(
                    "UPDATE admin_tokens SET expires_at = ? WHERE id = ?", (past, made["id"])
                )
            assert_problem(await api.get(f"{API}/me", headers=mine), 401)
            listed = (await api.get(f"{API}/tokens")).json()["items"]
            assert [t["expired"] for t in listed if t["id"] == made["id"]] == [True]
            never = await api.post(f"{API}/tokens", json={"name": "long", "role": "viewer"})
            assert never.json()["expires_at"] is None
            too_short = await api.post(
                f"{API}/tokens", json={"name": "x", "role": "viewer", "expires_in": 5}
            )
            assert_problem(too_short, 422)
    finally:
        admin.close()
