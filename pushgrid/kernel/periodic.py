"""The child processes of ``pushgrid up``: a command run until cancelled (the admin API, the
other members of a local cluster), or every N seconds (the stats job).

A child is a separate process so a Spark JVM never shares the push server's event loop or
memory; a periodic run still going when the next is due is not doubled.

A long-running child that exits on its own is said at WARNING, naming it and how it ended (exit
code or signal), and :func:`supervised` restarts it after a back-off that doubles (1 s to 30 s),
or says it will not: after a clean exit (code 0: it was stopped on purpose), or when it already
restarted :attr:`RestartPolicy.limit` times within :attr:`RestartPolicy.period` (a child that
cannot start is not restarted forever). ADR 027.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this (child) process when its parent dies (fork -> exec)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


async def run_periodically(
    argv: list[str], interval: float, log_path: Path, first_delay: float = 60.0
) -> None:
    """Run ``argv`` after ``first_delay`` seconds and then every ``interval`` seconds, forever."""
    await asyncio.sleep(first_delay)
    while True:
        await _run_once(argv, log_path)
        await asyncio.sleep(interval)


async def _run_once(argv: list[str], log_path: Path) -> None:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as output:
        # its own process group: a Spark JVM started by the child is ended with it
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdout=output,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code = await process.wait()
        except asyncio.CancelledError:
            await _end_group(process)
            raise
    if code == 0:
        log.info("periodic %s finished", " ".join(argv[1:3]))
    else:
        log.warning("periodic %s exited with %s (see %s)", " ".join(argv[1:3]), code, log_path)


async def run_child(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    log_path: Path | None = None,
    preexec: Callable[[], None] | None = None,
    grace: float = 5.0,
    own_session: bool = False,
) -> int:
    """Run ``argv`` until it exits (its exit code: negative for a signal) or this coroutine is
    cancelled; then SIGTERM it, and SIGKILL it after ``grace`` seconds. ``env`` adds variables;
    output goes to ``log_path`` (else to this process's terminal).

    ``own_session`` puts the child in a session of its own: a Ctrl-C in the terminal reaches
    the parent only, which stops its children itself, in order, and says so; a child hit by
    the same Ctrl-C would exit on its own and be reported (and restarted) as if it had failed."""
    output = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        output = log_path.open("ab")
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=asyncio.subprocess.STDOUT if output is not None else None,
            env={**os.environ, **env} if env else None,
            preexec_fn=preexec,
            start_new_session=own_session,
        )
    finally:
        if output is not None:
            output.close()
    try:
        return await process.wait()
    finally:
        if process.returncode is None:
            process.terminate()
            with contextlib.suppress(TimeoutError, ProcessLookupError):
                await asyncio.wait_for(process.wait(), grace)
            if process.returncode is None:
                process.kill()


async def _end_group(process: asyncio.subprocess.Process, grace: float = 10.0) -> None:
    """SIGINT to the child's group (the run records itself as interrupted), then SIGKILL."""
    for signum in (signal.SIGINT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.wait()), grace)


def exit_text(code: int) -> str:
    """``exited with code 1``, ``was killed by signal SIGKILL (9)``."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = "signal"
    return f"was killed by signal {name} ({-code})"


@dataclass
class RestartPolicy:
    """When to restart a child that exited: after ``delays[n]`` seconds for the ``n``-th restart
    in a row (the last delay repeats), at most ``limit`` restarts within ``period`` seconds. A
    child that ran ``stable`` seconds starts over at the first delay."""

    delays: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
    limit: int = 5
    period: float = 300.0
    stable: float = 60.0
    _restarts: deque[float] = field(default_factory=deque)
    _streak: int = 0

    def next_delay(self, now: float, ran_for: float) -> float | None:
        """Seconds to wait before the restart (and count it), or None: do not restart."""
        while self._restarts and now - self._restarts[0] > self.period:
            self._restarts.popleft()
        if len(self._restarts) >= self.limit:
            return None
        self._streak = 0 if ran_for >= self.stable else self._streak
        delay = self.delays[min(self._streak, len(self.delays) - 1)]
        self._streak += 1
        self._restarts.append(now)
        return delay

    @property
    def recent(self) -> int:
        return len(self._restarts)


async def supervised(
    name: str,
    run: Callable[[], Awaitable[int]],
    log_path: Path | None = None,
    policy: RestartPolicy | None = None,
) -> None:
    """Run a child with ``run()`` (which returns its exit code) until cancelled, restarting it by
    ``policy`` when it exits with a failure; every exit is one WARNING naming the child."""
    policy = policy or RestartPolicy()
    see = f" (see {log_path})" if log_path is not None else ""
    while True:
        started = time.monotonic()
        code = await run()
        now = time.monotonic()
        ended = f"pushgrid up: {name} {exit_text(code)} after {now - started:.1f} s{see}"
        if code == 0:
            log.warning("%s; not restarting it: it stopped cleanly (on purpose)", ended)
            return
        delay = policy.next_delay(now, now - started)
        if delay is None:
            log.warning(
                "%s; not restarting it: it already restarted %d times within %g s",
                ended,
                policy.recent,
                policy.period,
            )
            return
        log.warning(
            "%s; restarting it in %g s (restart %d of at most %d within %g s)",
            ended,
            delay,
            policy.recent,
            policy.limit,
            policy.period,
        )
        await asyncio.sleep(delay)
