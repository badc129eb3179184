"""Issue 34 (2.10) through the admin API itself (the console mounted at /console, no token):
unknown component files are 404 and callback requests naming no callback 400, with no log line
(the unit tests in tests/unit/test_console_requests.py cover the cases one by one)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pushgrid.console.mount import mount_console

from .pgtest import AdminHarness


async def test_the_mounted_console_refuses_unknown_files_and_callbacks_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    admin = AdminHarness(tmp_path / "admin", [])
    mount_console(admin.app, admin.settings.admin)
    try:
        async with admin.client(None) as anonymous:
            with caplog.at_level(logging.INFO):
                caplog.clear()
                for _ in range(3):
                    unknown = await anonymous.get("/console/_dash-component-suites/nope/x.js")
                    assert unknown.status_code == 404
                    callback = await anonymous.post(
                        "/console/_dash-update-component",
                        json={"output": "nope.children", "inputs": [], "changedPropIds": []},
                    )
                    assert callback.status_code == 400
                    assert callback.json()["code"] == "invalid_callback"
                noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
                assert noisy == [], [r.getMessage()[:120] for r in noisy]
    finally:
        admin.close()
