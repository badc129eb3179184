"""A whole cluster on this machine for ``pushgrid up --members N`` (and ``make cluster``).

Member 1 runs in the ``pushgrid up`` process; members 2..N run as ``pushgrid server`` children
that die with it. Every member reads the same configuration file; what differs between them is
given as ``PUSHGRID_*`` variables (which win over the file): member ``i`` listens on the client
and monitoring ports of the file plus ``i - 1``, and its cluster endpoint is
``127.0.0.1:7100 + 10 * (i - 1)`` (each member uses three ports from there; a ``ClusterMembers``
in the file or environment moves the start to its first entry's port, so that several local
clusters can run on one machine). Without a
``ClusterPassword`` in the file, the members share a random one kept in
``ClusterDataDir/local-cluster.secret`` (0600), handed to them as ``PUSHGRID_CLUSTERPASSWORD``:
the bus is never anonymous, not even on a laptop.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from pushgrid.config import Settings, env_name
from pushgrid.kernel.addresses import parse_address
from pushgrid.kernel.periodic import die_with_parent, run_child

from .natsnode import write_private

CLUSTER_BASE_PORT = 7100
CLUSTER_PORT_STEP = 10


def _shift(address: str, offset: int) -> str:
    host, port = parse_address(address)
    host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"{host}:{port + offset}"


def cluster_endpoints(count: int, base: int = CLUSTER_BASE_PORT) -> list[str]:
    return [f"127.0.0.1:{base + CLUSTER_PORT_STEP * i}" for i in range(count)]


def cluster_base_port(settings: Settings) -> int:
    """Where the local cluster's endpoints start: the first ``ClusterMembers`` entry's port when
    one is given, else :data:`CLUSTER_BASE_PORT`."""
    if not settings.cluster_members:
        return CLUSTER_BASE_PORT
    return parse_address(settings.cluster_members[0])[1]


def local_cluster_password(settings: Settings) -> str:
    """The configured ``ClusterPassword``, else this machine's random one (made once, 0600)."""
    if settings.cluster_password:
        return settings.cluster_password
    path = settings.cluster_data_dir / "local-cluster.secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, secrets.token_urlsafe(32))
    os.chmod(path, 0o600)
    return path.read_text(encoding="utf-8").strip()


def member_overrides(settings: Settings, count: int, index: int, mode: str) -> dict[str, str]:
    """The configuration keys of member ``index`` (1-based) of a local cluster of ``count``."""
    offset = index - 1
    return {
        "ClusterPassword": local_cluster_password(settings),
        "Listen": ", ".join(_shift(a, offset) for a in settings.listen) or _shift("*:8800", offset),
        "MonitorHTTP.Listen": ", ".join(_shift(a, offset) for a in settings.monitor_http_listen),
        "ServerName": f"m{index}",
        "ClusterMembers": ", ".join(cluster_endpoints(count, cluster_base_port(settings))),
        "ClusterMember": str(index),
        "ClusterDeliveryMode": mode,
        # the local members share this host's cores: one process each (docs/workers.md)
        "Workers": "1",
    }


def as_environment(overrides: dict[str, str]) -> dict[str, str]:
    return {env_name(key): value for key, value in overrides.items()}


def admin_members(settings: Settings, count: int) -> str:
    """``Admin.Members`` naming every member's monitoring endpoint."""
    if not settings.monitor_http_listen:
        return ""
    first = settings.monitor_http_listen[0]
    return ", ".join(f"m{i}=http://{_shift(first, i - 1)}" for i in range(1, count + 1))


async def run_member(
    config: Path | None, environment: dict[str, str], log_path: Path, base_env: dict[str, str]
) -> int:
    """Run one ``pushgrid server`` child until it exits (its exit code) or is cancelled; it dies
    with this process."""
    argv = [sys.executable, "-m", "pushgrid", "server"]
    if config is not None:
        argv += ["--config", str(config)]
    return await run_child(
        argv,
        env={**base_env, **environment},
        log_path=log_path,
        preexec=die_with_parent,
        grace=10.0,
        own_session=True,
    )
