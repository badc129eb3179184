"""A session's answers in request order while its publishes are in flight (issue 32, ADR 042).

A publish is handed to the engine as soon as its frame is read, without waiting for the
publishes before it on the same connection: a Guaranteed publish waits for a quorum's
acknowledgement, and a connection that had one publish in flight at a time carried one
message per round trip. Its answer, though, must leave after the answers to every request
before it (docs/protocol.md section 2): :class:`InOrder` holds the answers still computing and
sends each once every earlier one is out.

The subject's order stays the order of the frames: the publishes are started as tasks in that
order, and every engine takes a message's place in its subject's order before its first
suspension (server/engine/base.py, ``Engine.publish``), so the first steps of the tasks, which
asyncio runs in the order they were created, queue them in the order they came.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable

from pushgrid.protocol.frames import PublishResultFrame, ServerFrame

log = logging.getLogger(__name__)

#: Publishes one connection may have in flight; the next frame waits for the oldest answer (and
#: the transport stops reading when its inbox fills): a bounded amount of memory per client.
MAX_IN_FLIGHT = 64

Answer = ServerFrame | asyncio.Future[PublishResultFrame]


class InOrder:
    """Answers sent in the order they were added, each once it is ready."""

    def __init__(self, send: Callable[[ServerFrame], None]) -> None:
        self._send = send
        self._pending: deque[Answer] = deque()
        self._idle: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, answer: Answer) -> None:
        """Send ``answer`` now if nothing is before it, else once everything before it is out."""
        if not self._pending and not isinstance(answer, asyncio.Future):
            self._send(answer)
            return
        self._pending.append(answer)
        if isinstance(answer, asyncio.Future):
            answer.add_done_callback(self._flush)
        self._flush()

    async def settle(self) -> None:
        """Return once every answer added so far is out (before a request that is not a
        publish is handled, or a pong or a close frame is sent)."""
        while self._pending:
            if self._idle is None:
                self._idle = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._idle)

    async def room(self) -> None:
        """Wait while :data:`MAX_IN_FLIGHT` answers are pending."""
        while len(self._pending) >= MAX_IN_FLIGHT:
            head = self._pending[0]
            if isinstance(head, asyncio.Future):
                await asyncio.wait([head])
            await asyncio.sleep(0)  # its done callback runs the flush

    def _flush(self, _: object = None) -> None:
        while self._pending:
            head = self._pending[0]
            if isinstance(head, asyncio.Future):
                if not head.done():
                    return
                self._pending.popleft()
                if head.cancelled():
                    continue  # the server is stopping: no answer
                if head.exception() is not None:  # the session's publish task never raises
                    log.error("a publish answer failed", exc_info=head.exception())
                    continue
                self._send(head.result())
            else:
                self._pending.popleft()
                self._send(head)
        if self._idle is not None:
            if not self._idle.done():
                self._idle.set_result(None)
            self._idle = None
