"""The engine's values as outgoing frames: the engine returns values, this side frames them.

The engine (``server/engine``) knows nothing of the wire (tests/unit/test_import_rules.py): a
:class:`~pushgrid.server.engine.base.Published` or a
:class:`~pushgrid.server.engine.base.Snapshot` becomes a protocol ``message`` and then an
:class:`~pushgrid.server.framing.outframe.OutFrame` here, where the hub and the session need
it (ADR 018, ADR 024). The live update of a message is built once, by the hub, and shared by
every subscriber of every transport (the pending ones included): the hub owns that cache, not
the engine's values.
"""

from __future__ import annotations

from pushgrid.protocol.codec import encode
from pushgrid.protocol.frames import MessageFrame, MessageKind

from ..engine.base import Published, Snapshot
from ..framing.outframe import SETS, OutFrame


def message_of(published: Published, kind: MessageKind) -> MessageFrame:
    """The ``message`` frame delivering ``published`` as ``kind``."""
    return MessageFrame(
        kind=kind,
        subject=published.subject,
        content=published.content,
        fields=published.fields,
        epoch=published.epoch,
        seq=published.seq,
        qos=published.qos,
        retained=published.retained,
        ts=published.ts,
        # live updates only: a recovered or historical message's age is not a delivery latency
        ingress=published.ingress if kind == "update" else 0,
    )


def update_frame(published: Published) -> OutFrame:
    """The live update (the hub builds it once per message and shares it)."""
    # OutFrame.message's rule, known here without looking: an update moves a position when it
    # is guaranteed (the per-message path of every fan-out: kept short)
    move = SETS if published.qos == "guaranteed" else 0
    payload = encode(message_of(published, "update"))
    return OutFrame(payload, move, published.subject, published.epoch, published.seq)


def message_frame(published: Published, kind: MessageKind) -> OutFrame:
    """``published`` as ``kind`` (recovered, historical: one frame per request)."""
    if kind == "update":
        return update_frame(published)
    return OutFrame.message(message_of(published, kind))


def snapshot_frame(snapshot: Snapshot) -> OutFrame:
    """The ``snapshot`` message frame."""
    message = MessageFrame(
        kind="snapshot",
        subject=snapshot.subject,
        content=snapshot.content,
        fields=snapshot.fields,
        epoch=snapshot.epoch,
        seq=snapshot.seq,
        qos=snapshot.qos,
        retained=True,
        ts=snapshot.ts,
    )
    return OutFrame.message(message)
