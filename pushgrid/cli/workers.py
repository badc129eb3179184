"""``pushgrid server`` with ``Workers`` > 1: the supervisor and its worker processes (ADR 044).

The CLI wires them because a worker is a whole ``PushServer`` (server/app.py) over a
``WorkersEngine`` (server/workers/engine.py), and server/app.py itself imports the workers'
pieces: the runner that joins both lives above them (pushgrid/cli/main.py ``_run_worker``).
"""

from __future__ import annotations

import logging
import os
import re
import resource
import socket
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pushgrid.config import ConfigError, Settings
from pushgrid.config.cli_support import fail

if TYPE_CHECKING:
    from pushgrid.server.app import PushServer
    from pushgrid.server.monitoring.supervision_board import SupervisionBoard
    from pushgrid.server.workers.supervisor import Supervisor, WorkerPlan

log = logging.getLogger(__name__)

_WORKERS_LINE = re.compile(r"^\s*Workers\s*=", re.IGNORECASE)


def worker_count(settings: Settings) -> int:
    """What ``Workers`` means on this machine for these settings, or exit 2 naming the key."""
    from pushgrid.server.workers.cores import auto_workers, resolve_workers

    value = settings.server.workers
    count = resolve_workers(value, auto_workers() if value == "auto" else 1)
    if value == "auto":
        log.info(
            "Workers = auto: %d process%s (the usable cores)", count, "" if count == 1 else "es"
        )
    return count


def workers_set(config: Path | None, environ: Mapping[str, str]) -> bool:
    """Does the operator say ``Workers`` (``PUSHGRID_WORKERS`` or a ``Workers =`` line)?"""
    if environ.get("PUSHGRID_WORKERS", "").strip():
        return True
    if config is None or not config.is_file():
        return False
    lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    return any(_WORKERS_LINE.match(line) for line in lines)


def up_workers(config: Path | None, settings: Settings, members: int) -> int:
    """How many processes ``pushgrid up`` serves on: the operator's ``Workers`` when set, else
    ``auto`` on a single-node server (the usable cores) and 1 in a local cluster (``--members``:
    its members share this host's cores, docs/workers.md)."""
    if members > 1:
        return 1
    if workers_set(config, os.environ):
        return worker_count(settings)
    from pushgrid.server.workers.cores import auto_workers

    count = auto_workers()
    log.info("pushgrid up: Workers = auto: %d process%s", count, "" if count == 1 else "es")
    return count


def serve_workers(
    settings: Settings,
    workers: int,
    run_worker: Callable[[WorkerPlan, SupervisionBoard], int],
) -> None:
    """Bind the listeners, fork ``workers`` workers running ``run_worker`` (given the board
    the supervisor writes each worker's restarts and heartbeats on), supervise them; exit with
    their code."""
    from pushgrid.server.app import build_tls_contexts
    from pushgrid.server.monitoring.supervision_board import SupervisionBoard
    from pushgrid.server.workers.cores import check_descriptors
    from pushgrid.server.workers.supervisor import bind_listeners

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
    board = SupervisionBoard(workers)  # before the first fork: every worker inherits it
    supervisor = _board_supervisor(workers, bound, partial(_with_board, run_worker, board), board)
    raise typer.Exit(supervisor.run())


def _with_board(
    run_worker: Callable[[WorkerPlan, SupervisionBoard], int],
    board: SupervisionBoard,
    plan: WorkerPlan,
) -> int:
    return run_worker(plan, board)


def _board_supervisor(
    workers: int,
    listeners: list[list[tuple[socket.socket, bool]]],
    run_worker: Callable[[WorkerPlan], int],
    board: SupervisionBoard,
) -> Supervisor:
    """The supervisor, writing each worker's state on the board whenever it changes.

    A subclass here rather than a change in server/workers/: the supervisor's own job is to
    keep workers running; the board is the ops plane's (worker 0's Workers MBean reads it).
    """
    from pushgrid.server.workers.supervisor import Supervisor, _Slot

    class BoardSupervisor(Supervisor):
        def _publish(self, slot: _Slot) -> None:
            board.write(slot.index, slot.pid, slot.restarts, slot.last_beat, slot.stalled)

        def _died(self, slot: _Slot, status: int) -> None:
            super()._died(slot, status)
            self._publish(slot)

        def _check(self, now: float) -> None:  # every turn of its loop (0.2 s at most)
            super()._check(now)
            for slot in self.slots:
                self._publish(slot)

    return BoardSupervisor(workers, listeners, run_worker)


def _name(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"{host}:{port}"


def show_board(server: PushServer, board: SupervisionBoard) -> None:
    """Worker 0's Workers MBean, reading the supervisor's board (its restarts and heartbeats)."""
    from pushgrid.server.monitoring.workers_view import workers_bean

    bean = workers_bean(server, server.loop_bridge.wrap, board)
    server.jolokia.registry.register(bean, replace=True)
