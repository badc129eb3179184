"""benchmarks/connections.py on a small scale against a real server: every connection opens and
subscribes, every paced publish reaches its subscribers, and the figures add up."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from .pgtest import ServerProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import connections


def test_two_hundred_connections_from_two_processes_receive_every_message(
    server_factory: Callable[..., ServerProcess],
) -> None:
    srv = server_factory()
    assert srv.proc is not None
    options = connections.parse(
        [
            "--port",
            str(srv.port),
            "-n",
            "200",
            "--processes",
            "2",
            "--per-address",
            "150",
            "--hot",
            "50",
            "--hot-rate",
            "20",
            "--interval",
            "2",
            "--duration",
            "2",
            "--sample-every",
            "1",
            "--drain",
            "20",
            "--server-pid",
            str(srv.proc.pid),
            "--timeout",
            "120",
        ]
    )
    result = connections.run(options)
    assert result["processes"] == 2
    assert result["sources"] == ["127.0.2.1", "127.0.2.2"]
    assert result["opened"] == 200
    assert result["subscribed"] == 250  # one own subject each, the hot one for every 4th
    assert result["published_cold"] == 200  # 100/s over 2 s: every subject once
    assert result["published_hot"] == 40  # 20/s for 2 s
    assert result["publish_refused"] == 0
    assert result["publish_unanswered"] == 0
    expected = result["published_cold"] + 50 * result["published_hot"]
    assert result["deliveries_expected"] == expected
    assert result["deliveries_received"] == expected
    assert result["latency"]["samples"] == expected
    assert 0 < result["latency"]["p50_ms"] <= result["latency"]["p99_ms"]
    assert result["lost_connections"] == 0
    assert result["refused_subscriptions"] == 0
    assert result["server_rss_kib_per_connection"] is not None
    assert result["generator_cpu_s_total"] > 0
    assert srv.proc.poll() is None  # the server is untouched by the run
