"""Real pushgrid clusters for the tests: members as ``pushgrid server`` processes, each running
its own nats-server child, all on 127.0.0.1.

``Cluster(tmp, configured=4, mode="Guaranteed").start(1, 2, 3)`` launches those members together
(a seed waits for the others to elect a JetStream leader) and waits until each one reports its
quorum and sees the others. ``member(i)`` is the :class:`ServerProcess` of member ``i``
(1-based, the order of ``ClusterMembers``).
"""

from __future__ import annotations

import random
import socket
import time
from pathlib import Path
from typing import Any

import httpx

from .pgtest import ServerProcess

CLUSTER_START_TIMEOUT = 60.0
CLUSTER_PASSWORD = "test-cluster-secret"  # the bus is never anonymous (issue 22)


def free_port_block(size: int = 3) -> int:
    """A port P such that P .. P+size-1 were all free a moment ago on 127.0.0.1.

    Chosen below the kernel's ephemeral range (``ip_local_port_range``), where ``free_port()``
    and outgoing connections take theirs, so nothing else grabs P+1 or P+2 meanwhile."""
    low = _ephemeral_low()
    for _ in range(200):
        base = random.randrange(max(1024, low - 12_000), low - size)
        sockets = []
        try:
            for port in range(base, base + size):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError("no free block of ports")


class Cluster:
    def __init__(
        self,
        tmp: Path,
        configured: int = 3,
        mode: str = "Guaranteed",
        shared_port: int | None = None,
        **settings: Any,
    ) -> None:
        self.endpoints = [f"127.0.0.1:{free_port_block()}" for _ in range(configured)]
        self.members = [
            ServerProcess(
                _mkdir(tmp / f"m{index}"),
                member_settings(self.endpoints, index, mode, settings),
                port=shared_port,
            )
            for index in range(1, configured + 1)
        ]

    def member(self, index: int) -> ServerProcess:
        return self.members[index - 1]

    def running(self) -> list[ServerProcess]:
        return [m for m in self.members if m.proc is not None and m.proc.poll() is None]

    def start(self, *indices: int) -> Cluster:
        chosen = [self.member(i) for i in indices or range(1, len(self.members) + 1)]
        for member in chosen:
            member.launch()
        for member in chosen:
            member.wait_ready(CLUSTER_START_TIMEOUT)
        self.wait_healthy()
        return self

    def wait_healthy(self, timeout: float = CLUSTER_START_TIMEOUT) -> None:
        """Every running member has its quorum and sees every other running member up."""
        deadline = time.monotonic() + timeout
        expected = {m.settings["ServerName"] for m in self.running()}
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                if all(self._healthy(m, expected, last) for m in self.running()):
                    return
            except httpx.HTTPError as exc:
                last["error"] = repr(exc)
            time.sleep(0.2)
        raise AssertionError(f"cluster not healthy within {timeout} s: {last}")

    @staticmethod
    def _healthy(member: ServerProcess, expected: set[str], last: dict[str, Any]) -> bool:
        status = cluster_status(member)
        last[member.settings["ServerName"]] = status
        up = {m["name"] for m in status["members"] if m["state"] == "up"}
        return bool(status["quorum"]) and expected <= up

    def kill_all(self) -> None:
        for member in self.members:
            member.kill()


def member_settings(
    endpoints: list[str], index: int, mode: str, settings: dict[str, Any]
) -> dict[str, Any]:
    """The configuration of member ``index`` (1-based) of ``endpoints``, plus ``settings``."""
    return {
        "ServerName": f"m{index}",
        "ClusterMembers": ", ".join(endpoints),
        "ClusterMember": index,
        "ClusterDeliveryMode": mode,
        "MetricsArchive": "",
        "MetaSubjectInterval": 0,
        "ClusterPassword": CLUSTER_PASSWORD,
        **settings,
    }


def cluster_status(member: ServerProcess) -> dict[str, Any]:
    """The member's view of the cluster (monitoring /health, same data as the Cluster MBean)."""
    response = httpx.get(f"{member.monitor_url}/health", timeout=2.0, trust_env=False)
    status: dict[str, Any] = response.json()["cluster"]
    return status


def _ephemeral_low() -> int:
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
