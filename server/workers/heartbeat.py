"""A worker's heartbeat: one byte to the supervisor every ``HEARTBEAT`` seconds, written by
the event loop itself, so a stopped (SIGSTOP) or stuck loop stops beating
(server/workers/supervisor.py)."""

from __future__ import annotations

import asyncio
import socket

from .supervisor import HEARTBEAT

#: the byte of a worker still starting (its engine: a cluster engine may wait for its quorum):
#: alive, but a death then is a start-up error, not one to restart (server/workers/supervisor.py)
STARTING = b"s"
#: the byte of a worker that has started
RUNNING = b"h"


async def heartbeat(control: socket.socket, started: asyncio.Event | None = None) -> None:
    """Beat until the supervisor is gone: ``STARTING`` until ``started`` is set, then
    ``RUNNING`` (no ``started``: running from the first beat)."""
    control.setblocking(False)
    while True:
        try:
            control.send(RUNNING if started is None or started.is_set() else STARTING)
        except BlockingIOError:
            pass  # the supervisor is behind: the bytes already queued say the same
        except OSError:
            return  # the supervisor is gone (this process dies with it: PR_SET_PDEATHSIG)
        await asyncio.sleep(HEARTBEAT)
