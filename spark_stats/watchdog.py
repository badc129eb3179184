"""The Spark JVM never outlives its Python driver: a tiny watchdog process kills it if it stays.

PySpark's JVM exits by itself when the pipe on its stdin closes (the driver died), but only if
its shutdown completes; a JVM that hangs in its shutdown hooks, or whose pipe another process
still holds, stays -- with a 2 GB heap, per interrupted run. :func:`guard` starts
``python -m spark_stats.watchdog <jvm pid>`` with a pipe from the driver on its stdin. When the
driver ends (however: exit, exception, SIGKILL) the pipe closes; the watchdog then gives the JVM
:data:`GRACE` seconds to exit on its own, then SIGKILLs it. It holds a pidfd of the JVM, so a
recycled pid is never signalled. It is in the driver's process group, so a runner that ends the
group (``admin_api.services.jobs``) ends it too.

    python -m spark_stats.watchdog PID [--grace SECONDS]
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
from typing import IO, Final

__all__ = ["GRACE", "guard", "main"]

#: Seconds the JVM has to exit by itself once its driver is gone (a clean exit takes ~1 s).
GRACE: Final = 10.0

_guards: list[subprocess.Popen[bytes]] = []


def guard(jvm_pid: int, grace: float = GRACE) -> subprocess.Popen[bytes]:
    """Start the watchdog of ``jvm_pid`` (a child of this process); it lives as long as we do.

    The write end of its stdin pipe stays open in this process only (not inherited by later
    children: Python pipes are close-on-exec), so it closes exactly when this process ends.
    """
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pushgrid.spark_stats.watchdog",
            str(jvm_pid),
            "--grace",
            str(grace),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        close_fds=True,
    )
    _guards.append(process)  # keep the pipe (and the Popen) alive with the driver
    return process


def _wait_for_eof(stream: IO[bytes]) -> None:
    while stream.read(4096):
        pass


def _exited(pidfd: int, timeout: float) -> bool:
    readable, _, _ = select.select([pidfd], [], [], timeout)
    return bool(readable)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_stats.watchdog")
    parser.add_argument("pid", type=int)
    parser.add_argument("--grace", type=float, default=GRACE)
    args = parser.parse_args(argv)
    # a Ctrl-C meant for the driver (same process group) must not end the watchdog first
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pidfd = os.pidfd_open(args.pid)
    except ProcessLookupError:
        return 0  # already gone
    _wait_for_eof(sys.stdin.buffer)
    if _exited(pidfd, args.grace):
        return 0
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        return 0
    print(
        f"spark_stats.watchdog: killed Spark JVM {args.pid} (its driver is gone)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
