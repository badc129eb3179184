"""Runs a callable on the event loop from the Jolokia worker thread and waits for its result.

Only live reads (counters, engine gauges, the hub) and MBean operations go through it; the
per-second read model is immutable and read directly on the worker thread (ADR 014).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any


class LoopBridge:
    """Bound to the running loop by :meth:`bind`, called on that loop's thread."""

    def __init__(self, timeout: float = 10.0) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.timeout = timeout
        self._loop_thread: int | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember ``loop`` and the thread it runs on (call this from that loop)."""
        self.loop = loop
        self._loop_thread = threading.get_ident()

    def on_loop_thread(self) -> bool:
        return self._loop_thread == threading.get_ident()

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def on_loop(*args: Any) -> Any:
            loop = self.loop
            if loop is None or self.on_loop_thread():
                return function(*args)
            future = asyncio.run_coroutine_threadsafe(_call(function, args), loop)
            return future.result(self.timeout)

        return on_loop


async def _call(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    result = function(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
