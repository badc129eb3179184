"""The admin API's browser surfaces and secrets (issue 22 items 5 and 6), on a real process.

``pushgrid admin --bootstrap`` under uvicorn on a free port, with the console mounted, as
``make up`` runs it: the docs load nothing from another site and persist no token, every page
and answer carries CSP / X-Frame-Options / nosniff / Referrer-Policy, a token a client put in a
query string is not in the access log, the SQLite file is private whatever the umask, and the
alert webhook's URL is never logged.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .pgtest import AdminHarness, ServerProcess, free_port, member_entry, write_conf
from .test_admin_cli import ADMIN, AdminProcess

TOKEN_IN_QUERY = "pgt_query-string-token-0x7E57"


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminProcess]:
    workdir = tmp_path_factory.mktemp("admin-hardening")
    port = free_port()
    conf = write_conf(
        workdir / "admin.conf",
        {
            "Database": f"sqlite:///{workdir / 'data' / 'admin.db'}",
            "Admin.Listen": f"127.0.0.1:{port}",
            "MetricsArchive": "off",
            "StatsInterval": 0,
            # uvicorn writes its access log only at DEBUG (the admin API is quiet by default):
            # the query-string test needs the access lines to check what they hold
            "LogLevel": "DEBUG",
        },
    )
    previous = os.umask(0o022)  # the usual umask: files are world-readable unless made private
    try:
        process = AdminProcess([*ADMIN, "--config", str(conf), "--bootstrap"], workdir, port)
    finally:
        os.umask(previous)
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def _get(admin: AdminProcess, path: str, **kwargs: object) -> httpx.Response:
    with httpx.Client(base_url=admin.base, trust_env=False, timeout=10) as http:
        return http.get(path, **kwargs)  # type: ignore[arg-type]


def test_docs_load_only_local_assets_and_persist_no_token(admin: AdminProcess) -> None:
    page = _get(admin, "/api/docs")
    assert page.status_code == 200
    html = page.text
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources, html
    assert all(s.startswith("/api/docs/assets/") for s in sources), sources
    assert "<script>" not in html, "no inline script (the CSP allows 'self' only)"
    assert "persistAuthorization" not in html
    assert "cdn" not in html.lower()
    for source in sources:
        asset = _get(admin, source)
        assert asset.status_code == 200, source
        assert len(asset.content) > 100
        assert "cdn.jsdelivr" not in asset.text[:4096] or source.endswith(".png")
    init = _get(admin, "/api/docs/assets/swagger-init.js").text
    assert "persistAuthorization: false" in init
    assert "SwaggerUIBundle" in _get(admin, "/api/docs/assets/swagger-ui-bundle.js").text[:2000]
    assert _get(admin, "/api/docs/assets/../main.py").status_code == 404
    assert _get(admin, "/api/docs/assets/redoc.standalone.js").status_code == 404


@pytest.mark.parametrize("path", ["/api/docs", "/console/", "/api/v1/openapi.json", "/api/v1/me"])
def test_security_headers_on_pages_and_answers(admin: AdminProcess, path: str) -> None:
    response = _get(admin, path)
    assert response.status_code in (200, 401), response.text
    headers = response.headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    policy = headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    if path in ("/api/docs", "/console/"):
        scripts = re.search(r"script-src ([^;]+)", policy)
        assert scripts is not None, policy
        assert "'unsafe-inline'" not in scripts.group(1)
        assert "http" not in scripts.group(1), "no script from another site"
    else:
        assert policy.startswith("default-src 'none'")


def test_console_inline_scripts_match_its_policy(admin: AdminProcess) -> None:
    """Dash's inline renderer script is allowed by hash: every inline script's hash is listed."""
    import base64
    import hashlib

    response = _get(admin, "/console/")
    policy = response.headers["content-security-policy"]
    page = re.sub(r"<!--.*?-->", "", response.text, flags=re.S)  # (IE-only conditional comments)
    inline = re.findall(
        r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>(.*?)</script>", page, re.S
    )
    assert inline, "Dash has an inline renderer script"
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy, script[:80]


def test_query_string_token_is_not_in_the_access_log(admin: AdminProcess) -> None:
    response = _get(admin, f"/api/v1/me?token={TOKEN_IN_QUERY}&x=1")
    assert response.status_code == 401
    log = admin.err_path.read_text("utf-8", "replace") + admin.output()
    assert "/api/v1/me?token=" in log, "the access log line is there"
    assert TOKEN_IN_QUERY not in log


def test_database_file_is_private_whatever_the_umask(admin: AdminProcess) -> None:
    database = admin.out_path.parent / "data" / "admin.db"
    files = [database, *database.parent.glob("admin.db-*")]
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
    assert modes[database.name] == 0o600, modes
    assert all(mode & 0o077 == 0 for mode in modes.values()), modes


async def test_alert_webhook_url_is_never_logged(
    tmp_path: Path, server_factory, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing webhook is logged by its origin only (a Slack-style URL holds its key)."""
    import asyncio

    secret = "T000/B000/webhook-key-0xFEED"
    attempts: list[bytes] = []

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        attempts.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 500 Oops\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    hook = await asyncio.start_server(refuse, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{hook.sockets[0].getsockname()[1]}/services/{secret}"
    push: ServerProcess = server_factory(ServerName="hook-member", MetaSubjectInterval=0)
    harness = AdminHarness(
        tmp_path / "admin",
        [member_entry("hook-member", push)],
        alerts_webhook=url,
        alerts_webhook_retries=1,
    )
    runner = harness.app.state.alert_runner
    try:
        with caplog.at_level(logging.DEBUG):
            async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
                await runner._webhook(http, url, {"rule": "r", "state": "firing"})
    finally:
        hook.close()
        harness.close()
    assert len(attempts) == 2, "tried and retried"
    failures = [r for r in caplog.records if "webhook" in r.getMessage()]
    assert failures, caplog.text
    assert secret not in caplog.text
    assert "webhook-key" not in json.dumps([r.getMessage() for r in caplog.records])


def test_docs_render_in_chromium_under_their_policy(admin: AdminProcess, browser) -> None:
    """Swagger UI renders every operation with the CSP on, offline, with nothing logged as an
    error (a CSP violation is one) and nothing in localStorage."""
    browser.driver.get(f"{admin.base}/api/docs")
    # the first /openapi.json builds the schema of every route, and Swagger UI lays them
    # all out: on a loaded machine that took longer than the harness's 20 s once
    count = browser.wait_js(
        "return document.querySelectorAll('.opblock').length", "Swagger UI's operations", 90
    )
    assert count >= 30
    errors = [e for e in browser.driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    assert browser.js("return window.localStorage.length") == 0
