"""Members in network namespaces on one bridge, and partitions between them (nftables).

Per-address rules on 127.0.0.x cannot separate members (NATS route connections leave from
127.0.0.1, REFERENCE.md), so each member gets a namespace of its own with one address on a
bridge in the root namespace::

    root namespace: bridge pgfb<pid> 10.213.N.1/24, the tests' clients
      |-- veth -- namespace pgf-<pid>-m1: eth0 10.213.N.11 (member 1 and its nats-server)
      |-- veth -- namespace pgf-<pid>-m2: eth0 10.213.N.12
      '-- veth -- namespace pgf-<pid>-m3: eth0 10.213.N.13

``isolate(k)`` drops every packet between member k and the other members (an nft table in each
of their namespaces); the root namespace still reaches everyone, so clients can watch an
isolated member. ``heal()`` removes the tables. Names carry the creating process's id, so a run
that died without cleaning up is swept by the next one (:func:`sweep_orphans`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .cluster import Cluster, member_settings
from .pgtest import ServerProcess

PREFIX = "pgf"
_TABLE = "pgfault"
_RUN_TIMEOUT = 10.0
_ROUTE_PORT = 7100
_CLIENT_PORT = 8800
_MONITOR_PORT = 8900


def unavailable_reason() -> str | None:
    """Why members cannot be put in network namespaces here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add); not root here"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool) is None:
            return f"'{tool}' not found (Debian package {package}; 'make test' installs it)"
    probe = f"{PREFIX}-probe-{os.getpid()}"
    created = _run("ip", "netns", "add", probe, check=False)
    _run("ip", "netns", "del", probe, check=False)
    if created.returncode != 0:
        return f"network namespaces not allowed here: ip netns add: {created.stderr.strip()}"
    return None


class Network:
    """``size`` namespaces on one bridge; every method but :meth:`create` is safe to call on a
    half-built network, and :meth:`remove` never raises. Names come from the process id: one
    network per process at a time."""

    def __init__(self, size: int = 3) -> None:
        self.size = size
        self.tag = str(os.getpid())
        self.bridge = f"{PREFIX}b{self.tag}"
        self.subnet = _free_subnet()
        self.gateway = f"{self.subnet}.1"
        self.isolated: set[int] = set()

    def namespace(self, index: int) -> str:
        return f"{PREFIX}-{self.tag}-m{index}"

    def address(self, index: int) -> str:
        return f"{self.subnet}.{10 + index}"

    def prefix(self, index: int) -> list[str]:
        """The command prefix that runs a program inside member ``index``'s namespace."""
        return ["ip", "netns", "exec", self.namespace(index)]

    def create(self) -> Network:
        sweep_orphans()
        try:
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")
            for index in range(1, self.size + 1):
                self._add_member(index)
        except BaseException:
            self.remove()
            raise
        return self

    def _add_member(self, index: int) -> None:
        ns, outside, inside = self.namespace(index), self._veth(index), f"{self._veth(index)}i"
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        _run("ip", "link", "set", outside, "master", self.bridge)
        _run("ip", "link", "set", outside, "up")
        _run("ip", "link", "set", inside, "netns", ns)
        inns = self.prefix(index)
        _run(*inns, "ip", "link", "set", inside, "name", "eth0")
        _run(*inns, "ip", "addr", "add", f"{self.address(index)}/24", "dev", "eth0")
        _run(*inns, "ip", "link", "set", "eth0", "up")
        _run(*inns, "ip", "link", "set", "lo", "up")
        _run(*inns, "ip", "route", "add", "default", "via", self.gateway)

    def _veth(self, index: int) -> str:
        return f"{PREFIX}v{self.tag}m{index}"

    def isolate(self, index: int, *, cut: bool = True) -> None:
        """Drop every packet between member ``index`` and the other members, both ways.

        ``cut`` also ends the TCP connections between them (``ss -K``), as a partition longer
        than the peers' pings and TCP timeouts does. Without it a partition of a few seconds
        only stalls the connections: TCP retransmits what was sent meanwhile after the heal,
        and the NATS routes resume as if nothing happened."""
        others = [i for i in range(1, self.size + 1) if i != index]
        self._drop(index, [self.address(i) for i in others])
        for other in others:
            self._drop(other, [self.address(index)])
        self.isolated.add(index)
        if cut:
            for other in others:
                _run(*self.prefix(index), "ss", "-K", "dst", self.address(other), check=False)
                _run(*self.prefix(other), "ss", "-K", "dst", self.address(index), check=False)

    def _drop(self, index: int, sources: list[str]) -> None:
        rules = (
            f"table inet {_TABLE} {{\n"
            "  chain input { type filter hook input priority 0; policy accept;\n"
            f"    ip saddr {{ {', '.join(sources)} }} drop\n"
            "  }\n"
            "}\n"
        )
        _run(*self.prefix(index), "nft", "-f", "-", stdin=rules)

    def heal(self) -> None:
        """Remove every partition rule (members whose namespace has none are skipped)."""
        for index in range(1, self.size + 1):
            _run(*self.prefix(index), "nft", "delete", "table", "inet", _TABLE, check=False)
        self.isolated.clear()

    def remove(self) -> None:
        """Delete the namespaces (and with them the veth pairs) and the bridge. Kill the
        processes inside first: a namespace outlives its name while a process holds it."""
        for index in range(1, self.size + 1):
            _run("ip", "netns", "del", self.namespace(index), check=False)
            _run("ip", "link", "del", self._veth(index), check=False)
        _run("ip", "link", "del", self.bridge, check=False)


def sweep_orphans() -> None:
    """Remove namespaces and bridges left by runs whose process is gone (a killed pytest)."""
    for name in _names("netns", "list"):
        if name.startswith(f"{PREFIX}-") and _dead(name.split("-")[1]):
            _run("ip", "netns", "del", name, check=False)
    for name in _names("link", "show", "type", "bridge"):
        if name.startswith(f"{PREFIX}b") and _dead(name[len(PREFIX) + 1 :]):
            _run("ip", "link", "del", name, check=False)


def _names(*what: str) -> list[str]:
    try:
        entries = json.loads(_run("ip", "-j", *what, check=False).stdout or "[]")
    except ValueError:
        return []
    return [str(e.get("name") or e.get("ifname") or "") for e in entries]


def _dead(pid: str) -> bool:
    return pid.isdigit() and not Path(f"/proc/{pid}").exists()


def _free_subnet() -> str:
    """A 10.213.N subnet no route of the root namespace uses yet."""
    routes = _run("ip", "-o", "route", "show", check=False).stdout
    start = os.getpid() % 200
    for offset in range(200):
        subnet = f"10.213.{(start + offset) % 200 + 20}"
        if f"{subnet}." not in routes:
            return subnet
    raise RuntimeError("no free 10.213.N.0/24 subnet for the test network")


def _run(
    *command: str, check: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=_RUN_TIMEOUT,
        check=False,
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")
    return result


class NetnsCluster(Cluster):
    """A :class:`Cluster` whose member k runs in namespace k of ``net``, at its address there:
    cluster endpoint ``<address>:7100`` (routes 7100, its NATS client port 7101), clients on
    ``<address>:8800``, monitoring on ``<address>:8900``, all reachable from the root namespace
    through the bridge."""

    def __init__(self, tmp: Path, net: Network, mode: str = "Guaranteed", **settings: Any) -> None:
        self.net = net
        self.endpoints = [f"{net.address(i)}:{_ROUTE_PORT}" for i in range(1, net.size + 1)]
        self.members = [self._member(tmp, i, mode, settings) for i in range(1, net.size + 1)]

    def _member(self, tmp: Path, index: int, mode: str, settings: dict[str, Any]) -> ServerProcess:
        address = self.net.address(index)
        workdir = tmp / f"m{index}"
        workdir.mkdir(parents=True, exist_ok=True)
        listen = {
            "Listen": f"{address}:{_CLIENT_PORT}",
            "MonitorHTTP.Listen": f"{address}:{_MONITOR_PORT}",
        }
        member = ServerProcess(
            workdir,
            {**listen, **member_settings(self.endpoints, index, mode, settings)},
            port=_CLIENT_PORT,
        )
        member.host = address
        member.monitor_port = _MONITOR_PORT
        member.prefix = tuple(self.net.prefix(index))
        return member

    def index_of_node(self, node_name: str | None) -> int | None:
        """The member whose NATS node is ``node_name`` (``pushgrid-m<k>``: docs/cluster.md)."""
        if node_name and node_name.startswith("pushgrid-m") and node_name[10:].isdigit():
            return int(node_name[10:])
        return None


@contextmanager
def running_cluster(tmp_path: Path, what: str, **settings: Any) -> Iterator[NetnsCluster]:
    """A started 3-member cluster in namespaces, always killed and removed after; skips ``what``
    (the test's name for itself) with the reason where namespaces cannot be made."""
    import pytest

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"{what} skipped: {reason}")
    net = Network(3).create()
    nodes = NetnsCluster(tmp_path, net, **settings)
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.kill_all()
        net.remove()
