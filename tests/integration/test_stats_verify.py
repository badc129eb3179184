"""Cross-check (issue 16): a member running with the archive on, and the pipeline over that
archive, agree on the 1m/5m/15m window statistics as of the same second.

A real server archives its per-second samples while HTTP publishes make its indicators move;
``pushgrid stats verify --member <its monitoring URL>`` reads its live windows (/stats) and their
second T, runs the real pipeline (local Spark) as of T over the archive, open hour included, and
compares the node scope: every window equal (tests/unit/test_stats_hygiene.py shows the
comparison reporting differences and restarts).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from .pgtest import REPO, ServerProcess, http_publish, spark_env, stats_json

pytestmark = pytest.mark.slow
pytest.importorskip("pyspark")

NODE = "verify-node"
SECOND_WINDOW_CHECKS = 7 * 3  # indicators x (1m, 5m, 15m)


def _verify(
    server: ServerProcess, archive: Path, warehouse: Path
) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "pushgrid",
        "stats",
        "verify",
        "--member",
        server.monitor_url,
    ]
    argv += ["--archive", str(archive), "--warehouse", str(warehouse), "--master", "local[1]"]
    return subprocess.run(
        argv,
        cwd=REPO,
        env={**spark_env(), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.timeout(600)
async def test_pipeline_windows_equal_the_members_live_windows(
    server_factory, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    server = server_factory(MetricsArchive=str(archive), ServerName=NODE)
    for k in range(12):  # messages of growing sizes, some seconds apart: indicators vary
        for _ in range(k % 4 + 1):
            answer = await http_publish(server, f"/verify/{k}", "x" * (10 * k + 1))
            assert answer.status_code in (200, 202), answer.text
        await asyncio.sleep(0.7)
    document = await stats_json(server)
    assert document["indicators"]["incoming_messages_per_second"]["windows"]["1m"]["max"] > 0

    done = await asyncio.to_thread(_verify, server, archive, tmp_path / "warehouse")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{SECOND_WINDOW_CHECKS} equal, 0 different" in done.stdout
    assert f"node:{NODE}" in done.stdout
