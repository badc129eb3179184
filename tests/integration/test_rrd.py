"""``pushgrid rrd``: a real server feeds a real RRD through the real ``rrdtool``.

The values ``rrdtool`` gives back must be the server's: the last update holds the /stats counters,
the 1-second rates of the DERIVE data sources add up to the counters' increase, and the
connected-users GAUGE is the number of open sessions. The members' monitoring port asks for
Basic auth, as in production. A restart of the member (totals back to
zero) must not show as a spike.
"""

from __future__ import annotations

import asyncio
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from pushgrid.metrics.rrd import DS_NAMES, data_sources

from .pgtest import PUSHGRID, clean_env, monitor_http, parse_stats_text, run_cli

pytestmark = pytest.mark.skipif(
    shutil.which("rrdtool") is None, reason="rrdtool missing (make system-deps installs it)"
)


def rrdtool(*args: str) -> str:
    return subprocess.run(
        ["rrdtool", *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout


def lastupdate(path: Path) -> tuple[int, dict[str, float]]:
    names, _, row = rrdtool("lastupdate", str(path)).strip().split("\n")
    ts, values = row.split(":")
    return int(ts), dict(zip(names.split(), map(float, values.split()), strict=True))


def fetch(path: Path, start: int, end: int) -> dict[str, list[float]]:
    """{data source: [1-second AVERAGE values]} (NaN for unknown seconds)."""
    lines = rrdtool("fetch", str(path), "AVERAGE", "-r", "1", "-s", str(start), "-e", str(end))
    header, *rows = [line for line in lines.split("\n") if line.strip()]
    names = header.split()
    columns: dict[str, list[float]] = {name: [] for name in names}
    for row in rows:
        for name, value in zip(names, row.split(":")[1].split(), strict=True):
            columns[name].append(float(value))
    return columns


AUTH = {"MonitorUsername": "ops", "MonitorPassword": "rrd-secret"}


async def stats_counters(server) -> dict[str, float]:
    auth = (AUTH["MonitorUsername"], AUTH["MonitorPassword"])
    async with monitor_http(server, auth=auth) as http:
        response = await http.get("/stats")
    _, values = parse_stats_text(response.text)
    return {ds.stats_key: float(values[ds.stats_key]) for ds in data_sources()}


def start_feed(server, directory: Path, seconds: int) -> subprocess.Popen[str]:
    member = f"{server.settings['ServerName']}={server.monitor_url}"
    return subprocess.Popen(
        [
            *PUSHGRID,
            "rrd",
            "feed",
            "--member",
            member,
            "--dir",
            str(directory),
            "--count",
            f"{seconds}",
        ],
        env={  # the member credentials come from the settings (here their variables)
            **clean_env(),
            "PUSHGRID_ADMIN_MEMBERUSERNAME": AUTH["MonitorUsername"],
            "PUSHGRID_ADMIN_MEMBERPASSWORD": AUTH["MonitorPassword"],
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def wait_for_first_update(path: Path, feed: subprocess.Popen[str]) -> int:
    for _ in range(200):
        if feed.poll() is not None:
            pytest.fail(
                f"pushgrid rrd feed exited early:\n{feed.stdout.read() if feed.stdout else ''}"
            )
        try:  # fails until the feed has created the file and updated it once
            return lastupdate(path)[0]
        except (subprocess.CalledProcessError, ValueError):
            pass
        await asyncio.sleep(0.05)
    pytest.fail("pushgrid rrd feed made no update within 10 s")


async def test_feed_matches_the_server_counters(server_factory, connect, subject, tmp_path):
    server = server_factory(ServerName="rrd-a", **AUTH)
    topic = subject("IBM")
    subscribers = [await connect(server) for _ in range(3)]
    for client in subscribers:
        await client.subscribe(topic)
    before = await stats_counters(server)
    path = tmp_path / "rrd-a.rrd"
    feed = start_feed(server, tmp_path, seconds=6)
    first = await wait_for_first_update(path, feed)
    publisher = subscribers[0]
    for n in range(20):
        await publisher.publish_ok(topic, f"{n}", {"price": str(n)})
    for client in subscribers:
        await client.messages(20, topic)
    output, _ = await asyncio.to_thread(feed.communicate, timeout=30)
    assert feed.returncode == 0, output
    after = await stats_counters(server)

    last, raw = lastupdate(path)
    assert last > first
    for ds in data_sources():  # the last update holds the counters exactly
        assert raw[ds.name] == after[ds.stats_key], ds.name

    columns = fetch(path, first - 5, last)
    for ds in data_sources():
        known = [v for v in columns[ds.name] if not math.isnan(v)]
        assert known, f"{ds.name}: no known second"
        if ds.kind == "GAUGE":
            assert set(known) == {3.0}, f"{ds.name}: {known}"  # three open sessions throughout
        else:  # rates x 1 s add up to the counter's increase while fed
            increase = after[ds.stats_key] - before[ds.stats_key]
            assert sum(known) == pytest.approx(increase, rel=1e-9, abs=1e-6), ds.name
    assert after["messages_in_total"] - before["messages_in_total"] == 20
    assert after["messages_out_total"] - before["messages_out_total"] == 60


async def test_a_restart_gives_no_spike_and_graphs_are_drawn(server_factory, connect, tmp_path):
    server = server_factory(ServerName="rrd-b", **AUTH)
    for _ in range(5):  # totals well above zero, so a restart resets them downwards
        client = await connect(server)
        await client.close()
    path = tmp_path / "rrd-b.rrd"
    feed = start_feed(server, tmp_path, seconds=7)
    first = await wait_for_first_update(path, feed)
    await server.arestart()
    output, _ = await asyncio.to_thread(feed.communicate, timeout=30)
    assert feed.returncode == 0, output
    last, _ = lastupdate(path)
    columns = fetch(path, first, last)
    for name in (DS_NAMES["connections_per_second"], DS_NAMES["disconnections_per_second"]):
        known = [v for v in columns[name] if not math.isnan(v)]
        assert all(0 <= v <= 5 for v in known), f"{name} spiked at the restart: {known}"

    out = tmp_path / "png"
    result = run_cli("rrd", "graph", "--dir", str(tmp_path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    pngs = sorted(p.name for p in out.glob("*.png"))
    charts = ("users", "connections", "messages", "bytes")
    periods = ("day", "week", "month", "year")
    assert pngs == sorted(f"rrd-b-{c}-{p}.png" for c in charts for p in periods)
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_member_and_empty_directory_are_clear_errors(tmp_path):
    result = run_cli("rrd", "feed", "--member", "nourl", "--dir", str(tmp_path), "--count", "1")
    assert result.returncode == 2
    assert "'nourl' is not NAME=http(s)://host:port" in result.stderr
    result = run_cli("rrd", "graph", "--dir", str(tmp_path))
    assert result.returncode == 2
    assert "no .rrd files" in result.stderr


def test_create_makes_the_file_once(tmp_path):
    member = "push-x=http://127.0.0.1:1"
    first = run_cli("rrd", "create", "--member", member, "--dir", str(tmp_path))
    assert first.returncode == 0, first.stderr
    assert "created" in first.stdout
    info = rrdtool("info", str(tmp_path / "push-x.rrd"))
    assert "step = 1\n" in info
    assert 'ds[msgs_out].type = "DERIVE"' in info
    assert 'ds[users].type = "GAUGE"' in info
    assert "ds[msgs_out].min = 0.0000000000e+00" in info
    again = run_cli("rrd", "create", "--member", member, "--dir", str(tmp_path))
    assert "exists, kept" in again.stdout
