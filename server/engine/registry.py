"""Engine name (the ``Engine`` setting) -> a factory building it from its settings parts.

The NATS engines are imported only when chosen, so a standalone server never loads nats-py.
A factory takes the engine's limits (from EngineLimitSettings), the cluster's part and the
server's name: never the whole Settings.
"""

from __future__ import annotations

from collections.abc import Callable

from pushgrid.config import ClusterSettings, EngineLimitSettings

from .base import Engine
from .limits import EngineLimits
from .memory import MemoryEngine


def _memory(limits: EngineLimits, cluster: ClusterSettings, server_name: str) -> Engine:
    return MemoryEngine(limits)


def _nats(limits: EngineLimits, cluster: ClusterSettings, server_name: str) -> Engine:
    from .cluster_factory import build_cluster_engine

    return build_cluster_engine(cluster, limits, server_name)


ENGINES: dict[str, Callable[[EngineLimits, ClusterSettings, str], Engine]] = {
    "memory": _memory,
    "nats": _nats,
}


def build_engine(limits: EngineLimitSettings, cluster: ClusterSettings, server_name: str) -> Engine:
    """The engine ``cluster.engine_name`` names, bounded by ``limits``, tagged ``server_name``."""
    return ENGINES[cluster.engine_name](EngineLimits.from_settings(limits), cluster, server_name)
