"""Server-Sent Events fallback (``GET /events``) for clients that cannot use WebSocket.

Each event's ``data`` is one server frame, the same JSON as on WebSocket. Events that move the
stream's position carry ``id: <token>``, where the token encodes the position ``(epoch, seq)`` of
every subject of the stream (base64url of a JSON object). A browser's EventSource sends the last
id back as ``Last-Event-ID`` when it reconnects by itself, so the server recovers each subject
exactly as a WebSocket client's resubscribe with ``recover`` would.
"""

from __future__ import annotations

import base64
import binascii

import msgspec

from pushgrid.protocol.frames import Position

from ..framing.outframe import OPENS, PENDS, SETS, OutFrame

_positions_encoder = msgspec.json.Encoder()
_positions_decoder = msgspec.json.Decoder(dict[str, tuple[str, int]])
RETRY_MS = 2000


class SseEncoder:
    """Turns outgoing frames into SSE events for one stream and tracks its positions.

    Positions come from each frame's :attr:`~pushgrid.server.framing.outframe.OutFrame.move` and
    position, set where the frame was built (engine value, ``subscribed`` answer): the payload
    is written as it is, never decoded. A ``subscribed`` frame's position holds only once the
    messages that follow it (snapshot, recovered, historical) have been sent, so it is kept
    *pending* and written into ids from the first event that is not one of those messages; the
    opening messages move the position themselves. ``up_to_date`` takes effect at once (nothing
    follows).
    """

    def __init__(self, chunked: bool, positions: dict[str, Position] | None = None) -> None:
        self.chunked = chunked
        self.positions: dict[str, tuple[str, int]] = {
            subject: (p.epoch, p.seq) for subject, p in (positions or {}).items()
        }
        self._pending: tuple[str, tuple[str, int]] | None = None
        self._first = True

    def event(self, frame: OutFrame) -> bytes:
        """The bytes on the wire for one server frame."""
        prefix = b""
        if self._first:
            prefix, self._first = b"retry: %d\n" % RETRY_MS, False
        if self._moves_position(frame):
            prefix += b"id: " + self.token() + b"\n"
        return self._chunk(prefix + b"data: " + frame.payload + b"\n\n")

    def _moves_position(self, frame: OutFrame) -> bool:
        move = frame.move
        pending = self._pending
        moved = self._commit_pending(pending, frame) if pending is not None else False
        if not move:
            return moved
        position = (frame.epoch, frame.seq)
        if move & PENDS:
            self._pending = (frame.subject, position)
            return moved
        if move & SETS:
            self.positions[frame.subject] = position
            return True
        return moved

    def _commit_pending(self, pending: tuple[str, tuple[str, int]], frame: OutFrame) -> bool:
        """Apply the ``pending`` ``subscribed`` position unless ``frame`` is one of its
        opening messages. True when a position changed."""
        subject, position = pending
        if frame.move & OPENS and frame.subject == subject:
            return False
        self._pending = None
        if self.positions.get(subject) == position:
            return False
        self.positions[subject] = position
        return True

    def token(self) -> bytes:
        return base64.urlsafe_b64encode(_positions_encoder.encode(self.positions)).rstrip(b"=")

    def end(self) -> bytes:
        """The end of the response body (the last chunk)."""
        return b"0\r\n\r\n" if self.chunked else b""

    def _chunk(self, data: bytes) -> bytes:
        if not self.chunked:
            return data
        return b"%x\r\n" % len(data) + data + b"\r\n"


def parse_last_event_id(value: str) -> dict[str, Position]:
    """Positions from a ``Last-Event-ID`` token; ValueError when it is not one of ours."""
    text = value.strip()
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        decoded = _positions_decoder.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError) as exc:
        raise ValueError(f"Last-Event-ID is not a pushgrid position token: {exc}") from None
    return {subject: Position(epoch, seq) for subject, (epoch, seq) in decoded.items()}


def parse_position(value: str) -> tuple[str, Position]:
    """``"<subject> <epoch>:<seq>"`` (the ``position`` query parameter)."""
    subject, _, point = value.strip().rpartition(" ")
    epoch, sep, seq_text = point.rpartition(":")
    if not subject or not sep or not epoch or not seq_text.isdigit():
        raise ValueError(f"position {value!r} is not '<subject> <epoch>:<seq>'")
    return subject.strip(), Position(epoch, int(seq_text))
