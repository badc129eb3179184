"""The child processes of ``pushgrid up``: a command run until cancelled (the admin API, the
other members of a local cluster), or every N seconds (the stats job).

A child is a separate process so a Spark JVM never shares the push server's event loop or
memory; a periodic run still going when the next is due is not doubled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


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
) -> None:
    """Run ``argv`` until it exits or this coroutine is cancelled; then SIGTERM it, and SIGKILL
    it after ``grace`` seconds. ``env`` adds variables; output goes to ``log_path`` (else to
    this process's terminal)."""
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
        )
    finally:
        if output is not None:
            output.close()
    try:
        await process.wait()
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
