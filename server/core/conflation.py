"""Conflation (spec 5.5): per subscription, at most one message per period.

A conflated subscription absorbs the subject's live messages; at the end of every period in which
something arrived it sends one message: the latest content and the union of the period's fields
with their latest values. Periods are counted from the moment the subscription went live (spec
Table 5.1: subscribed at 10:12:40 with 5 s, messages at :41 and :43, one message at :45, nothing
at :50). Timers are shared: every subscription due at the same instant is served by one
``call_at``. Subjects nobody conflates cost one dictionary lookup per message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pushgrid.protocol.frames import MessageFrame

from ..engine.base import Published
from ..framing.outframe import OutFrame
from .accounting import CLOSED


class ConflatedSubscription:
    __slots__ = ("absorbed", "active", "anchor", "content", "fields", "last", "period", "send")

    def __init__(self, send: Callable[[OutFrame], None], period_ms: int, anchor: float) -> None:
        self.send = send
        self.period = period_ms / 1000.0
        self.anchor = anchor
        self.active = True
        self.last: Published | None = None  # latest message of the current period
        self.content = ""
        self.fields: dict[str, str] = {}
        self.absorbed = 0  # messages of the current period (its one message carries the last)

    def next_due(self, now: float) -> float:
        elapsed = max(0.0, now - self.anchor)
        return self.anchor + (int(elapsed / self.period) + 1) * self.period

    def absorb(self, message: Published) -> bool:
        """Take one message; True when it opened the period (the caller schedules the send)."""
        opened = self.last is None
        self.absorbed += 1
        self.last = message
        self.content = message.content
        self.fields.update(message.fields)
        return opened

    def take_frame(self) -> OutFrame | None:
        last = self.last
        if last is None or not self.active:
            return None
        message = MessageFrame(
            kind="update",
            subject=last.subject,
            content=self.content,
            fields=self.fields,
            epoch=last.epoch,
            seq=last.seq,
            qos=last.qos,
            retained=last.retained,
            ts=last.ts,
            conflated=True,
        )
        frame = OutFrame.message(message)  # its own fields: one encoding per subscription
        self.last = None
        self.fields = {}
        return frame

    def take_abandoned(self) -> int:
        """The messages of a period whose subscription ended before it did (never sent)."""
        if self.active or self.last is None:
            return 0
        abandoned, self.absorbed, self.last, self.fields = self.absorbed, 0, None, {}
        return abandoned


class Conflator:
    """Sends conflated messages when their periods end, on shared timers."""

    def __init__(
        self,
        on_sent: Callable[[str, OutFrame, int], None],
        on_outcome: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self._due: dict[float, list[ConflatedSubscription]] = {}
        self._on_sent = on_sent  # (subject, frame, messages it stands for)
        self._on_outcome = on_outcome  # (subject, accounting column, count): abandoned periods

    def absorb(self, subscription: ConflatedSubscription, message: Published) -> None:
        if not subscription.absorb(message):
            return
        loop = asyncio.get_running_loop()
        due = subscription.next_due(loop.time())
        waiting = self._due.get(due)
        if waiting is None:
            self._due[due] = [subscription]
            loop.call_at(due, self._fire, due)
        else:
            waiting.append(subscription)

    def _fire(self, due: float) -> None:
        for subscription in self._due.pop(due, ()):
            subject = subscription.last.subject if subscription.last is not None else ""
            absorbed = subscription.absorbed
            frame = subscription.take_frame()
            if frame is not None:
                subscription.absorbed = 0
                subscription.send(frame)
                self._on_sent(subject, frame, absorbed)  # per subject (hot, watched, accounting)
                continue
            abandoned = subscription.take_abandoned()
            if abandoned and self._on_outcome is not None:
                self._on_outcome(subject, CLOSED, abandoned)
