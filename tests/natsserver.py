"""A throwaway one-node nats-server with JetStream (the NATS engines' contract suite, a member
on an existing NATS). ``tests/`` is on the path (pytest ``pythonpath``)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nats
import pytest

from pushgrid.server.cluster.natsnode import find_binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def nats_server(directory: Path) -> Iterator[str]:
    """Run ``nats-server -js`` on a free loopback port; yield its URL; kill it afterwards."""
    port = free_port()
    log = (directory / "nats.log").open("wb")
    process = subprocess.Popen(
        [
            find_binary("nats-server"),
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-sd",
            str(directory),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"nats-server did not start; see {directory / 'nats.log'}")
        yield f"nats://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()
        log.close()


async def delete_streams(url: str) -> None:
    """Remove every stream, so a test starts from an empty JetStream."""
    nc = await nats.connect(url)
    try:
        jsm = nc.jsm()
        for info in await jsm.streams_info():
            if info.config.name:
                await jsm.delete_stream(info.config.name)
    finally:
        await nc.close()


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real nats-server with JetStream per suite (imported by the suites' conftest.py)."""
    with nats_server(tmp_path_factory.mktemp("nats")) as url:
        yield url
