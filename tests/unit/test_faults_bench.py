"""The fault benchmark's throughput measurement (benchmarks/faults.py ``--sync-intervals``)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import faults


def _closed_port() -> int:
    """A loopback port nothing listens on (a publish there fails at once: ConnectError)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_publishers_share_one_ssl_context(ssl_contexts_built: list[ssl.SSLContext]) -> None:
    """httpx builds an SSL context per client (the CA bundle: 0.1 s of the one event loop on a
    loaded machine). Built per publisher, 256 publishers held every first request for 15-30 s
    and the run read as a server collapse to 1-12 publishes/s."""
    built = ssl_contexts_built
    member = SimpleNamespace(url=f"http://127.0.0.1:{_closed_port()}")
    cluster: Any = SimpleNamespace(members=[member])
    rate = asyncio.run(faults.throughput(cluster, 2, 16, 0.2, msg_ids=False))
    assert rate == 0  # nothing listens: every publish failed, none was counted
    assert len(built) == 1, f"{len(built)} SSL contexts for 16 publishers"
