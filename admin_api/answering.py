"""Which members answer: the admin API's memory of each member's last look (issue 34, 4.1).

A member whose process hangs (SIGSTOP, a stuck event loop, swapped out) still accepts TCP
connections (the kernel's backlog), so every read of it waits the whole member timeout. Before
this, one hung member made ``GET /api/v1/cluster`` wait 6 s (discovery, then the views) and the
console froze on its last answer. Now:

- every Jolokia call records its outcome here: a timeout starts the member's *silence*, any
  answer ends it (a refused connection is not silence: it fails at once and says so);
- while a member is silent, the request paths do not ask it at all: the read fails at once with
  "not answering for N s" (a :class:`~admin_api.member_client.MemberFailure` of kind
  ``timeout``), so a route answers in the time of the members that do answer;
- :class:`~admin_api.services.cluster.MemberWatch` keeps asking silent members (it is the
  *probe*): its first answer ends the silence.

Skipping also keeps requests from piling up in a stopped process's socket: each would run when
it wakes (an alert published twice, issue 34, 4.3).

Keyed by monitoring URL: that is what is connected to, whatever name a member is listed under.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from pushgrid.protocol.exceptions import MonitoringError

T = TypeVar("T")


class Silenced(MonitoringError):
    """The member went silent while a request to it was waiting (the request was dropped; the
    member client turns it into a ``member_timeout`` failure)."""

    code = "member_silent"

    def __init__(self, seconds: float) -> None:
        super().__init__(not_answering_text(seconds))
        self.seconds = seconds


@dataclass(slots=True)
class _Silence:
    since: float  # clock time of the first look that got no answer in time


class Answering:
    """Silences per member URL (one per admin API app; safe on one event loop)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._silent: dict[str, _Silence] = {}
        self._waiting: dict[str, asyncio.Event] = {}  # set when the member goes silent

    def answered(self, url: str) -> None:
        self._silent.pop(url, None)

    def refused(self, url: str) -> None:
        """Nothing listens (or the answer was an error): down, but not silent."""
        self._silent.pop(url, None)

    def missed(self, url: str) -> float:
        """A look got no answer in time; how long the member has been silent now. Requests
        still waiting for that member are dropped (:meth:`unless_silent`)."""
        silence = self._silent.setdefault(url, _Silence(self.clock()))
        event = self._waiting.pop(url, None)
        if event is not None:
            event.set()
        return self.clock() - silence.since

    async def unless_silent(self, url: str, request: Awaitable[T]) -> T:
        """``request``, unless the member goes silent first: then :class:`Silenced` at once.

        A request that was sent just before the member hung would wait the whole member
        timeout; this bounds it by the watch's first look that gets no answer (1-2 s)."""
        event = self._waiting.setdefault(url, asyncio.Event())
        task = asyncio.ensure_future(request)
        silenced = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({task, silenced}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            silenced.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if task.cancelled():
            raise Silenced(self.silent_for(url) or 0.0)
        return task.result()

    def silent_for(self, url: str) -> float | None:
        """Seconds since the member stopped answering; None while it answers."""
        silence = self._silent.get(url)
        return None if silence is None else max(0.0, self.clock() - silence.since)


def not_answering_text(seconds: float) -> str:
    """The one wording of a silence, in the API and on the console."""
    return f"not answering for {int(seconds)} s"
