"""``pushgrid server`` with ``Workers`` > 1: the supervisor and its worker processes (ADR 044).

The CLI wires them because a worker is a whole ``PushServer`` (server/app.py) over a
``WorkersEngine`` (server/workers/engine.py), and server/app.py itself imports the workers'
pieces: the runner that joins both lives above them (pushgrid/cli/main.py ``_run_worker``).
"""

from __future__ import annotations

import logging
import resource
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from pushgrid.config import ConfigError, Settings
from pushgrid.config.cli_support import fail

if TYPE_CHECKING:
    from pushgrid.server.workers.supervisor import WorkerPlan

log = logging.getLogger(__name__)


def worker_count(settings: Settings) -> int:
    """What ``Workers`` means on this machine for these settings, or exit 2 naming the key."""
    from pushgrid.server.workers.cores import auto_workers, resolve_workers

    value = settings.server.workers
    clustered = settings.cluster.engine_name != "memory"
    try:
        count = resolve_workers(value, clustered, auto_workers() if value == "auto" else 1)
    except ConfigError as exc:
        raise fail(f"configuration error\n{exc}", 2) from None
    if value == "auto":
        log.info(
            "Workers = auto: %d process%s%s",
            count,
            "" if count == 1 else "es",
            " (a cluster member runs one process)" if clustered else " (the usable cores)",
        )
    return count


def serve_workers(
    settings: Settings, workers: int, run_worker: Callable[[WorkerPlan], int]
) -> None:
    """Bind the listeners, fork ``workers`` workers running ``run_worker``, supervise them;
    exit with their code."""
    from pushgrid.server.app import build_tls_contexts
    from pushgrid.server.workers.cores import check_descriptors
    from pushgrid.server.workers.supervisor import Supervisor, bind_listeners

    listeners = settings.listeners
    addresses = [(host, port, False) for host, port in listeners.listen_addresses]
    if listeners.listen_encrypted:
        addresses += [(host, port, True) for host, port in listeners.listen_encrypted_addresses]
    try:
        check_descriptors(workers, len(addresses), resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        build_tls_contexts(listeners, settings.monitoring)  # a bad file: exit 2 before forking
    except ConfigError as exc:
        raise fail(f"configuration error\n{exc}", 2) from None
    try:
        bound = bind_listeners(addresses, workers, listeners.listen_backlog)
    except OSError as exc:
        raise fail(f"cannot start: {exc.strerror or exc}", 1) from None
    ports = ", ".join(_name(sock) for sock, _tls in bound[0])
    log.info("serving one server with %d worker processes on %s", workers, ports)
    supervisor = Supervisor(workers, bound, run_worker)
    raise typer.Exit(supervisor.run())


def _name(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"{host}:{port}"
