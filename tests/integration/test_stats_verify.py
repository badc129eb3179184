"""Cross-check (issue 16): a member running with the archive on, and the pipeline over that
archive, agree on the 1m/5m/15m window statistics as of the same second.

A real server archives its per-second samples while HTTP publishes make its indicators move;
``pushgrid stats verify --member <its monitoring URL>`` reads its live windows (/stats) and their
second T, runs the real pipeline (local Spark) as of T over the archive, open hour included, and
compares the node scope: every window equal. Then the same samples disagree once one archived
line is altered -- the comparison can fail.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metrics.archive import hour_path

from .pgtest import REPO, ServerProcess, clean_env, http_publish, stats_json

pytestmark = pytest.mark.slow
pytest.importorskip("pyspark")

NODE = "verify-node"
SECOND_WINDOW_CHECKS = 7 * 3  # indicators x (1m, 5m, 15m)


def _verify(
    server: ServerProcess, archive: Path, warehouse: Path
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "server", "stats", "verify", "--member", server.monitor_url]
    argv += ["--archive", str(archive), "--warehouse", str(warehouse), "--master", "local[1]"]
    return subprocess.run(
        argv,
        cwd=REPO,
        env={**clean_env(), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.timeout(600)
async def test_pipeline_windows_equal_the_members_live_windows(
    server_factory, tmp_path: Path
) -> None:
    # not across an hour boundary: the altered line below must be in the open file
    left = 3600 - time.time() % 3600
    if left < 120:
        await asyncio.sleep(left + 1)
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

    # alter one archived second (the first one, well inside every window): now they disagree
    path = hour_path(archive, NODE, int(time.time()))
    path = path.with_name(path.name + ".open") if not path.exists() else path
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[1].rstrip("\n").split(",")
    fields[-1] = str(int(fields[-1]) + 10**9)  # outgoing bytes of that second
    lines[1] = ",".join(fields) + "\n"
    path.write_text("".join(lines))
    done = await asyncio.to_thread(_verify, server, archive, tmp_path / "warehouse")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "different" in done.stdout
    assert "outgoing_bytes_per_second" in done.stdout
