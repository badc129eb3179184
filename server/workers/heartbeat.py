"""A worker's heartbeat: one byte to the supervisor every ``HEARTBEAT`` seconds, written by
the event loop itself, so a stopped (SIGSTOP) or stuck loop stops beating
(server/workers/supervisor.py)."""

from __future__ import annotations

import asyncio
import socket

from .supervisor import HEARTBEAT


async def heartbeat(control: socket.socket) -> None:
    control.setblocking(False)
    while True:
        try:
            control.send(b"h")
        except BlockingIOError:
            pass  # the supervisor is behind: the bytes already queued say the same
        except OSError:
            return  # the supervisor is gone (this process dies with it: PR_SET_PDEATHSIG)
        await asyncio.sleep(HEARTBEAT)
