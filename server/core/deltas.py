"""Field deltas: subscribers that ask for them get only the fields that changed (ADR 028).

A subscription with ``"delta": true`` (docs/protocol.md 5.1) receives, for each live update of
its subject, only the fields whose value differs from the last value delivered on that subject.
The hub keeps, per subject with at least one such subscriber, the last value of every field it
delivered (:class:`SubjectDeltas`); the delta frame is built once per message and shared by
every synced subscriber, like the update (ADR 018).

The table is bounded and counted like a snapshot (:class:`DeltaLimits`, issue 34): at most
``MaxFieldsPerSubject`` fields and ``MaxSnapshotSize`` bytes (UTF-8 of names and values) per
subject, and ``MaxRetainedBytes`` over every subject of the server. Non-retained publishes are
not refused for them (they never enter a snapshot): beyond a bound the table forgets the fields
changed longest ago. Forgetting loses nothing for a synced subscriber: a field the table does
not know counts as changed, so it is sent whole the next time a message carries it; only a new
subscriber's first ("full") message holds fewer fields (always every field of that message).

Nothing is lost: a subscription starts *unsynced*, and its first live message carries every field
the hub tracks (the "full" message); afterwards it receives every message of the subject in
order, and a field left out has the value it last received. A new subscription (subscribe,
re-subscribe, recovery after a reconnect) starts unsynced again; conflated subscriptions get
conflated messages, never deltas. What came before the first live message (snapshot,
recovered, historical and buffered messages) is sent whole.

The interface the hub uses is narrow: :meth:`SubjectDeltas.add`, the collection of sessions the
hub's other tables also are (``in``, ``len``, iteration, ``pop``) and
:meth:`SubjectDeltas.deliver` (a message in, ``(deliveries, bytes)`` out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from pushgrid.protocol.sizes import utf8_len

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


@dataclass(slots=True)
class DeltaLimits:
    """The bounds of every delta table of a hub (the snapshot bounds' settings) and the bytes
    they hold together (``0`` in ``max_total``: unbounded, as ``MaxRetainedBytes = 0``)."""

    max_fields: int = 1000  # MaxFieldsPerSubject
    max_bytes: int = 1024 * 1024  # MaxSnapshotSize
    max_total: int = 256 * 1024 * 1024  # MaxRetainedBytes
    total: int = 0  # bytes held by every table now


class SubjectDeltas:
    """One subject's delta subscribers and the last delivered value of each of its fields."""

    __slots__ = ("elided", "fields", "limits", "nbytes", "subscribers")

    def __init__(self, limits: DeltaLimits | None = None) -> None:
        self.fields: dict[str, str] = {}  # oldest change first
        self.subscribers: dict[Session, DeltaSubscriber] = {}
        self.limits = limits if limits is not None else DeltaLimits()
        self.nbytes = 0  # UTF-8 bytes of the names and values in ``fields``
        # deliveries of the last ``deliver`` that left unchanged fields out (accounting's
        # "merged into deltas", core/accounting.py)
        self.elided = 0

    def add(self, session: Session, send: Send) -> None:
        self.subscribers[session] = DeltaSubscriber(send)

    # A collection of its subscribers' sessions, like the hub's other tables (Hub._tables):
    # the hub drops the whole SubjectDeltas with its last subscriber.

    def pop(self, session: Session, /) -> DeltaSubscriber:
        """Drop ``session``'s subscription; with the last one the table's bytes leave the
        hub's total here (the hub then drops the table)."""
        subscriber = self.subscribers.pop(session)
        if not self.subscribers:
            self.limits.total -= self.nbytes
            self.fields, self.nbytes = {}, 0
        return subscriber

    def __contains__(self, session: object, /) -> bool:
        return session in self.subscribers

    def __len__(self) -> int:
        return len(self.subscribers)

    def __iter__(self) -> Iterator[Session]:
        return iter(self.subscribers)

    def _learn(self, changed: dict[str, str], keep: dict[str, str]) -> None:
        """Record ``changed`` as the newest values, then forget the oldest fields not in
        ``keep`` (the message's own) while a bound is passed."""
        known, limits = self.fields, self.limits
        grown = 0
        for name, value in changed.items():
            old = known.pop(name, None)  # re-inserted: the newest change goes last
            grown += utf8_len(value) - (utf8_len(old) if old is not None else -utf8_len(name))
            known[name] = value
        self.nbytes += grown
        limits.total += grown
        if self._over():
            for name in list(known):  # oldest change first
                if name in keep:
                    continue  # the message's own fields stay: its full message holds them
                freed = utf8_len(name) + utf8_len(known.pop(name))
                self.nbytes -= freed
                limits.total -= freed
                if not self._over():
                    return

    def _over(self) -> bool:
        limits = self.limits
        return (
            len(self.fields) > limits.max_fields
            or self.nbytes > limits.max_bytes
            or 0 < limits.max_total < limits.total
        )

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
        if changed:
            self._learn(changed, new)
        delta: OutFrame | None = None
        full: OutFrame | None = None
        size = synced = 0
        for subscriber in self.subscribers.values():
            if subscriber.synced:
                synced += 1
                if delta is None:
                    delta = _with_fields(message, changed, update)
                    if changed == message.fields:
                        update = delta
                subscriber.send(delta)
                size += delta.ws_size()
            else:
                if full is None:
                    every = {**known, **new}  # the message's own fields, whatever was forgotten
                    full = _with_fields(message, every, update)
                    if every == message.fields:
                        update = full
                subscriber.send(full)
                subscriber.synced = True
                size += full.ws_size()
        self.elided = synced if len(changed) < len(new) else 0
        return len(self.subscribers), size, update


def _with_fields(message: Published, fields: dict[str, str], update: OutFrame | None) -> OutFrame:
    """``message``'s update with ``fields`` in place of its own (its shared frame when equal)."""
    if fields == message.fields:
        return update if update is not None else update_frame(message)
    return OutFrame.message(msgspec.structs.replace(message_of(message, "update"), fields=fields))
