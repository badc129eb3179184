"""The supervisor of a multi-process server (``Workers`` > 1, ADR 044).

It binds the client listeners once per worker with ``SO_REUSEPORT`` (the kernel spreads new
connections over them), so a port another program holds is an error before any worker starts;
then it forks the workers, each with its own listeners and a control socket to the supervisor.
A worker writes a byte on the control socket every ``HEARTBEAT`` seconds. The supervisor:

- restarts a worker that died, with a WARNING naming it (its listeners stay bound meanwhile,
  so connections that arrive queue in their backlog instead of being refused);
- says so (WARNING) when a worker has not written for ``STALL_AFTER`` seconds (stopped with
  SIGSTOP, or stuck), and again (INFO) when it answers again: it never waits silently;
- stops every worker on SIGTERM / SIGINT (each closes its clients with 1001) and exits.

A worker that dies before its first heartbeat at start-up stops the whole server with its exit
code: a configuration it cannot run with would otherwise be restarted forever.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pushgrid.kernel.periodic import die_with_parent

log = logging.getLogger(__name__)

HEARTBEAT = 0.5  # seconds between two heartbeats of a worker
STALL_AFTER = 5.0  # seconds without a heartbeat before a worker is reported stuck
_STOP_TIMEOUT = 30.0  # seconds the workers get to close their clients on shutdown
_QUICK_DEATH = 2.0  # a worker dying sooner than this after its start is restarted with a delay
_MAX_RESTART_DELAY = 5.0


@dataclass
class WorkerPlan:
    """What one worker process is given: its index, the server's size, its listeners
    (``tls``: serve TLS on it), the mesh's name and its end of the control socket."""

    index: int
    workers: int
    token: str
    listeners: list[tuple[socket.socket, bool]]
    control: socket.socket


@dataclass
class _Slot:
    index: int
    listeners: list[tuple[socket.socket, bool]]
    pid: int = 0
    control: socket.socket | None = None
    started: float = 0.0
    last_beat: float = 0.0
    beaten: bool = False  # has written since its start (it runs)
    stalled: bool = False
    restarts: int = 0
    quick_deaths: int = 0
    restart_at: float | None = None
    extra: dict[str, int] = field(default_factory=dict)


def bind_reuse_port(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket with SO_REUSEPORT (and SO_REUSEADDR, as asyncio binds)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _cannot_listen(host: str, port: int, exc: OSError) -> OSError:
    return OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}")


def refuse_taken_port(host: str, port: int) -> None:
    """OSError when another socket already listens on ``host:port``: a bind without
    SO_REUSEPORT fails where one with it would quietly share the port with another server of
    the same user (a second ``pushgrid server`` on a port the first holds)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no owner
        probe.bind((host, port))


def bind_listeners(
    addresses: list[tuple[str, int, bool]], workers: int, backlog: int
) -> list[list[tuple[socket.socket, bool]]]:
    """Every worker's listeners: one socket per address per worker, all on the same port (an
    address with port 0 takes the port the first socket got). OSError naming the address when
    one cannot be bound (nothing is left bound then)."""
    per_worker: list[list[tuple[socket.socket, bool]]] = [[] for _ in range(workers)]
    try:
        for host, port, tls in addresses:
            bound = port
            if port:
                try:
                    refuse_taken_port(host, port)
                except OSError as exc:
                    raise _cannot_listen(host, port, exc) from None
            for index in range(workers):
                try:
                    sock = bind_reuse_port(host, bound, backlog)
                except OSError as exc:
                    raise _cannot_listen(host, bound, exc) from None
                bound = sock.getsockname()[1]
                per_worker[index].append((sock, tls))
    except OSError:
        for socks in per_worker:
            for sock, _tls in socks:
                sock.close()
        raise
    return per_worker


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


class Supervisor:
    """Forks ``workers`` processes running ``run_worker(plan)`` and keeps them running."""

    def __init__(
        self,
        workers: int,
        listeners: list[list[tuple[socket.socket, bool]]],
        run_worker: Callable[[WorkerPlan], int],
    ) -> None:
        self.workers = workers
        self.token = f"{os.getpid()}-{os.urandom(4).hex()}"
        self.run_worker = run_worker
        self.slots = [_Slot(i, listeners[i]) for i in range(workers)]
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        self.exit_code = 0

    # -- the workers --------------------------------------------------------------------------

    def _start(self, slot: _Slot) -> None:
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the worker: it never returns into the supervisor's code
            code = 1
            try:
                ours.close()
                self._close_others(slot)
                die_with_parent()
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(sig, signal.SIG_DFL)
                plan = WorkerPlan(slot.index, self.workers, self.token, slot.listeners, theirs)
                code = self.run_worker(plan)
            except BaseException:
                log.exception("worker %d failed", slot.index)
            finally:
                logging.shutdown()
                os._exit(code)
        theirs.close()
        ours.setblocking(False)
        slot.pid, slot.control = pid, ours
        slot.started = slot.last_beat = time.monotonic()
        slot.beaten = slot.stalled = False
        slot.restart_at = None
        self.selector.register(ours, selectors.EVENT_READ, slot)
        log.info("worker %d started (pid %d)", slot.index, pid)

    def _close_others(self, own: _Slot) -> None:
        """In a new worker: the supervisor's descriptors that are not its own."""
        self.selector.close()
        for slot in self.slots:
            if slot.control is not None:
                slot.control.close()
            if slot is not own:
                for sock, _tls in slot.listeners:
                    sock.close()

    def _beat(self, slot: _Slot) -> None:
        assert slot.control is not None
        try:
            data = slot.control.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the worker is gone: reaped by _reap
            self.selector.unregister(slot.control)
            slot.control.close()
            slot.control = None
            return
        now = time.monotonic()
        slot.last_beat = now  # alive, starting or running
        if b"h" in data:  # heartbeat.RUNNING: it has started (a death now is restarted)
            slot.beaten = True
        if slot.stalled:
            slot.stalled = False
            log.info("worker %d (pid %d) answers again", slot.index, slot.pid)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            slot = next((s for s in self.slots if s.pid == pid), None)
            if slot is not None:
                self._died(slot, status)

    def _died(self, slot: _Slot, status: int) -> None:
        if slot.control is not None:
            self.selector.unregister(slot.control)
            slot.control.close()
            slot.control = None
        pid, slot.pid = slot.pid, 0
        how = _describe(status)
        if self.stopping:
            log.info("worker %d stopped (%s)", slot.index, how)
            return
        if not slot.beaten and slot.restarts == 0:  # it never ran: a start-up error
            log.error("worker %d %s during start-up: stopping the server", slot.index, how)
            code = os.waitstatus_to_exitcode(status)
            self.exit_code = code if code > 0 else 1
            self.stop()
            return
        now = time.monotonic()
        slot.quick_deaths = slot.quick_deaths + 1 if now - slot.started < _QUICK_DEATH else 0
        delay = min(_MAX_RESTART_DELAY, 0.1 * 2**slot.quick_deaths) if slot.quick_deaths else 0
        slot.restarts += 1
        log.warning(
            "worker %d (pid %d) %s: restarting it%s (restart %d)",
            slot.index,
            pid,
            how,
            f" in {delay:.1f} s" if delay else "",
            slot.restarts,
        )
        slot.restart_at = now + delay

    def _check(self, now: float) -> None:
        for slot in self.slots:
            if slot.pid == 0 and slot.restart_at is not None and now >= slot.restart_at:
                self._start(slot)
            elif slot.pid and not slot.stalled and now - slot.last_beat > STALL_AFTER:
                slot.stalled = True
                log.warning(
                    "worker %d (pid %d) has not answered for %.1f s (stopped or stuck): "
                    "its clients are not served",
                    slot.index,
                    slot.pid,
                    now - slot.last_beat,
                )

    # -- running ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask every worker to stop (SIGTERM: each closes its clients with 1001)."""
        self.stopping = True
        for slot in self.slots:
            if slot.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signal.SIGTERM)

    def run(self) -> int:
        """Start the workers and supervise them until SIGTERM / SIGINT; the exit code."""
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        signal.signal(signal.SIGINT, lambda *_: self.stop())
        for slot in self.slots:
            self._start(slot)
        deadline: float | None = None
        while True:
            for key, _events in self.selector.select(timeout=0.2):
                self._beat(key.data)
            self._reap()
            now = time.monotonic()
            if not self.stopping:
                self._check(now)
            elif not any(slot.pid for slot in self.slots):
                break
            elif deadline is None:
                deadline = now + _STOP_TIMEOUT
            elif now > deadline:
                self._kill_all()
        for slot in self.slots:
            for sock, _tls in slot.listeners:
                sock.close()
        log.info("all %d workers stopped", self.workers)
        return self.exit_code

    def _kill_all(self) -> None:
        """The workers that did not stop within ``_STOP_TIMEOUT``: SIGKILL."""
        for slot in self.slots:
            if slot.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signal.SIGKILL)
