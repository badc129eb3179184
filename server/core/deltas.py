"""Field deltas: subscribers that ask for them get only the fields that changed (ADR 028).

A subscription with ``"delta": true`` (docs/protocol.md 5.1) receives, for each live update of
its subject, only the fields whose value differs from the last value delivered on that subject.
The hub keeps, per subject with at least one such subscriber, the last value of every field it
delivered (:class:`SubjectDeltas`, at most MaxFieldsPerSubject entries); the delta frame is built
once per message and shared by every synced subscriber, like the update (ADR 018).

Nothing is lost: a subscription starts *unsynced*, and its first live message carries every field
the hub tracks (the "full" message); afterwards it receives every message of the subject in
order, and a field left out has the value it last received. A new subscription (subscribe,
re-subscribe, recovery after a reconnect) starts unsynced again; conflated subscriptions get
conflated messages, never deltas. What came before the first live message (snapshot,
recovered, historical and buffered messages) is sent whole.

The interface the hub uses is narrow: :meth:`SubjectDeltas.add` / ``remove`` and
:meth:`SubjectDeltas.deliver` (a message in, ``(deliveries, bytes)`` out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from ..framing.outframe import OutFrame
from .outgoing import message_of, update_frame

if TYPE_CHECKING:
    from ..engine.base import Published
    from .session import Session

Send = Callable[[OutFrame], None]


class DeltaSubscriber:
    __slots__ = ("send", "synced")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.synced = False  # has it received the full message since it subscribed?


class SubjectDeltas:
    """One subject's delta subscribers and the last delivered value of each of its fields."""

    __slots__ = ("fields", "subscribers")

    def __init__(self) -> None:
        self.fields: dict[str, str] = {}
        self.subscribers: dict[Session, DeltaSubscriber] = {}

    def add(self, session: Session, send: Send) -> None:
        self.subscribers[session] = DeltaSubscriber(send)

    def remove(self, session: Session) -> bool:
        """Drop ``session``'s subscription; True when none is left (the hub drops the rest)."""
        self.subscribers.pop(session, None)
        return not self.subscribers

    def deliver(
        self, message: Published, update: OutFrame | None = None
    ) -> tuple[int, int, OutFrame | None]:
        """Send ``message`` to every delta subscriber; (deliveries, WebSocket bytes, the
        message's shared live update). ``update``: that frame when the hub built it already;
        one built here (a delta holding every field of the message) is handed back for the
        live subscribers, so the update is encoded once either way."""
        known = self.fields
        new = message.fields
        changed = {name: value for name, value in new.items() if known.get(name) != value}
        known.update(new)
        delta: OutFrame | None = None
        full: OutFrame | None = None
        size = 0
        for subscriber in self.subscribers.values():
            if subscriber.synced:
                if delta is None:
                    delta = _with_fields(message, changed, update)
                    if changed == message.fields:
                        update = delta
                subscriber.send(delta)
                size += delta.ws_size()
            else:
                if full is None:
                    full = _with_fields(message, dict(known), update)
                    if known == message.fields:
                        update = full
                subscriber.send(full)
                subscriber.synced = True
                size += full.ws_size()
        return len(self.subscribers), size, update


def _with_fields(message: Published, fields: dict[str, str], update: OutFrame | None) -> OutFrame:
    """``message``'s update with ``fields`` in place of its own (its shared frame when equal)."""
    if fields == message.fields:
        return update if update is not None else update_frame(message)
    return OutFrame.message(msgspec.structs.replace(message_of(message, "update"), fields=fields))
