"""The admin API's background loops (alert evaluation, SLO recording): one step every interval,
a failing step logged and the loop kept alive."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def repeat(
    step: Callable[[], Awaitable[object]], interval: Callable[[], float], what: str
) -> None:
    """Run ``step`` every ``interval()`` seconds (start to start; at least 50 ms apart), for
    ever; an exception is logged as ``<what> failed`` and the next step runs as planned."""
    while True:
        started = time.monotonic()
        try:
            await step()
        except Exception:
            log.exception("%s failed", what)
        elapsed = time.monotonic() - started
        await asyncio.sleep(max(0.05, interval() - elapsed))


class BackgroundTask:
    """A task started in the app's lifespan (:meth:`start`) and cancelled at its end."""

    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run(self) -> None:
        raise NotImplementedError
