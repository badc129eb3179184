"""The metrics archive's file handling at start-up (docs/archive.md): hour files left by an
earlier run, torn last lines, and retention (MetricsArchiveRetention)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pushgrid.metrics.archive import read_samples
from pushgrid.metrics.indicators import INDICATOR_NAMES

from .pgtest import ServerProcess, eventually, monitor_http, read_archive

NODE = "it-node"
HEADER = ",".join(["ts", "node", *INDICATOR_NAMES])


def line(ts: int, node: str = NODE) -> str:
    return ",".join([str(ts), node, *["1"] * len(INDICATOR_NAMES)])


def day_dir(root: Path, days_ago: int) -> Path:
    return root / (datetime.now(UTC).date() - timedelta(days=days_ago)).isoformat()


async def sampled(srv: ServerProcess, seconds: int = 1) -> int:
    """Wait (bounded) until the server took ``seconds`` more samples; return the last ts."""
    async with monitor_http(srv) as mon:
        start = (await mon.get("/stats", params={"format": "json"})).json()["ts"]
        for _ in range(100):
            ts = int((await mon.get("/stats", params={"format": "json"})).json()["ts"])
            if ts > 0 and ts >= start + seconds:
                return ts
            await asyncio.sleep(0.05)
    raise AssertionError("the sampler did not advance within 5 s")


async def avoid_hour_boundary() -> None:
    """The test prepares files of the current UTC hour: do not start in its last seconds."""
    left = 3600 - time.time() % 3600
    if left < 10:
        await asyncio.sleep(left + 0.5)


async def test_leftovers_retention_and_torn_lines(server_factory, tmp_path):
    await avoid_hour_boundary()
    root = tmp_path / "archive"
    now = int(time.time())
    hour_start = now - now % 3600
    moment = datetime.fromtimestamp(now, UTC)
    current = root / moment.strftime("%Y-%m-%d") / NODE / f"samples-{moment:%H}.csv.open"

    # this hour, from a run that crashed mid-line: the server appends to it
    current.parent.mkdir(parents=True)
    current.write_text(f"{HEADER}\n{line(hour_start)}\n{hour_start + 1},it-", encoding="utf-8")
    # an earlier hour (yesterday) of this node, torn too: renamed to .csv, line terminated
    yesterday = day_dir(root, 1) / NODE / "samples-05.csv.open"
    yesterday.parent.mkdir(parents=True)
    yesterday.write_text(f"{HEADER}\n{line(hour_start - 86400)}\n1,it", encoding="utf-8")
    # another node's open hour: not ours to close
    other = day_dir(root, 1) / "other-node" / "samples-05.csv.open"
    other.parent.mkdir(parents=True)
    other.write_text(f"{HEADER}\n{line(hour_start - 86400, 'other-node')}\n", encoding="utf-8")
    # retention 35 days: older date directories go, younger ones and non-dates stay
    for days_ago in (400, 36, 34):
        old = day_dir(root, days_ago) / NODE / "samples-00.csv"
        old.parent.mkdir(parents=True)
        old.write_text(f"{HEADER}\n", encoding="utf-8")
    (root / "notes").mkdir()

    srv = server_factory(
        ServerName=NODE, MetaSubjectInterval=0, MetricsArchive=str(root), MetricsArchiveRetention=35
    )
    last = await sampled(srv, 2)

    def written() -> bool:
        return any(int(row["ts"]) >= last for row in read_samples(current))

    await eventually(written, what=f"the sample of {last} in {current.name}")

    # the current hour: appended, the torn line terminated (and dropped by readers)
    lines = current.read_text(encoding="utf-8").split("\n")
    assert lines[0] == HEADER
    assert lines.count(HEADER) == 1, "no second header when appending"
    assert lines[1] == line(hour_start)
    assert lines[2] == f"{hour_start + 1},it-", "the torn line is terminated, not glued to"
    rows = read_samples(current)
    assert rows[0]["ts"] == str(hour_start)
    assert all(row["node"] == NODE for row in rows)
    assert [int(row["ts"]) for row in rows[1:]] == sorted({int(row["ts"]) for row in rows[1:]})
    assert int(rows[1]["ts"]) > hour_start

    # the earlier hour of this node: closed (renamed), its torn line terminated
    closed = yesterday.with_name("samples-05.csv")
    assert not yesterday.exists()
    assert closed.exists()
    assert closed.read_text(encoding="utf-8").endswith("1,it\n")
    assert [row["ts"] for row in read_samples(closed)] == [str(hour_start - 86400)]
    # another node's file is left alone
    assert other.exists()

    # retention
    assert not day_dir(root, 400).exists()
    assert not day_dir(root, 36).exists()
    assert day_dir(root, 34).exists()
    assert (root / "notes").exists()
    assert read_archive(root, NODE), "and the node goes on archiving"


async def test_retention_zero_keeps_everything(server_factory, tmp_path):
    root = tmp_path / "archive"
    ancient = root / "2001-01-01" / NODE / "samples-00.csv"
    ancient.parent.mkdir(parents=True)
    ancient.write_text(f"{HEADER}\n{line(978307200)}\n", encoding="utf-8")
    srv = server_factory(
        ServerName=NODE, MetaSubjectInterval=0, MetricsArchive=str(root), MetricsArchiveRetention=0
    )
    last = await sampled(srv, 1)
    await eventually(
        lambda: any(int(row["ts"]) >= last for row in read_archive(root, NODE)),
        what="an archive line",
    )
    assert ancient.exists()
