"""What every protocol object of a client connection shares: the state, the write path, the session.

A TCP connection starts as an :class:`~server.transport.http_protocol.HttpConnection` (h11). A
WebSocket upgrade or ``GET /events`` hands the transport over (``transport.set_protocol``, as
uvicorn does) to a :class:`~server.transport.websocket.WebSocketConnection` or an
:class:`~server.transport.event_stream.SseConnection`, and the HTTP object with its parser,
request and headers is dropped: an idle WebSocket keeps only what it needs (ADR 013).

The write path lives here, once: outgoing frames are queued and flushed once per loop iteration
(:mod:`server.transport.flusher`); the transport's write buffer is bounded by
``MaxOutboundBufferSize``: a client that lets it overflow is a slow consumer and is closed with
4001, without delaying anyone else. States change only through
:func:`~server.transport.states.next_state` (the table in server/transport/states.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from pushgrid.protocol.errors import CloseCode

from ..core.accounting import CLOSED, DROPPED, WRITTEN
from ..core.slow_consumers import WireState
from ..framing.outframe import OutFrame
from ..framing.wsframe import batch_frame
from .states import SENDING, ConnEvent, ConnState, next_state

if TYPE_CHECKING:
    from ..core.session import Session
    from .context import ConnectionContext

log = logging.getLogger(__name__)

#: The outbox's bound in units (see ``Connection._units``): at most 256, so the running count
#: stays among CPython's cached small ints and queueing a frame allocates nothing (ADR 058).
OUTBOX_UNITS = 256

_LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends a reset
_CLOSING, _CLOSED = ConnState.CLOSING, ConnState.CLOSED


class Connection(asyncio.Protocol):
    """The part of a connection every protocol shares (a :class:`~server.core.hub.Peer`)."""

    __slots__ = (
        "_backlog_since",
        "_batch_due",
        "_cap",
        "_deadline",
        "_held",
        "_held_from",
        "_limit",
        "_live_n",
        "_live_others",
        "_live_subject",
        "_marked",
        "_outbox",
        "_outbox_size",
        "_slow",
        "_unit",
        "_unit_shift",
        "_units",
        "bytes_in",
        "bytes_out",
        "ctx",
        "frames_out",
        "last_in",
        "last_out",
        "last_ping",
        "remote",
        "session",
        "state",
        "transport",
    )

    initial: ClassVar[ConnState] = ConnState.HTTP
    client_port: ClassVar[bool] = True  # counts in the server's traffic (not the monitoring port)
    batched: ClassVar[bool] = True  # frames may be batched (Batching*): WebSocket only
    transport_kind: ClassVar[str] = "websocket"  # what the Clients list shows (or "sse")
    compressed: ClassVar[bool] = False  # permessage-deflate agreed (wsdeflate.py)

    def __init__(self, ctx: ConnectionContext) -> None:
        self.ctx = ctx
        self.transport: asyncio.Transport | None = None
        self.remote = "?"
        self.state = self.initial
        # monotonic time after which the ticker cuts the connection (request timer, drain, close)
        self._deadline: float | None = None
        self.bytes_in = 0
        self.bytes_out = 0
        self.frames_out = 0  # frames queued for the client (messages and answers)
        self.last_in = self.last_out = self.last_ping = ctx.tick
        self.session: Session | None = None
        self._outbox: list[bytes] = []
        self._outbox_size = 0  # bytes queued since the last flush, for BatchingMaxSize
        self._batch_due: float | None = None
        self._marked = False  # in the flusher's list for the next flush
        # Marked for the next plain flush (no batching) while sending: a small live delivery of
        # the current subject only appends (the hot path of Connection.deliver) and is counted
        # later, by _settle (ADR 068). Any state change clears it.
        self._held = False
        self._held_from = 0  # the outbox's length when _settle last counted the held appends
        self._cap = OUTBOX_UNITS  # held appends allowed until len(outbox) passes it (_hold)
        self._limit = ctx.limits.max_outbound_buffer_size
        # The outbox's bound without a byte count per frame (an int allocated per delivery
        # past 256): each frame counts (len >> shift) + 1 units, 2**shift * OUTBOX_UNITS <=
        # the limit, so the units pass OUTBOX_UNITS no later than the bytes pass the limit;
        # then _outbox_full counts the bytes exactly (the limit is the old one, to the byte).
        self._units = 0
        self._unit_shift = max(1, self._limit // OUTBOX_UNITS).bit_length() - 1
        self._unit = 1 << self._unit_shift
        # The live deliveries queued since the last flush (core/accounting.py), written at the
        # flush, dropped or closed when the queue is discarded: counted, not listed. A flush
        # mostly carries one subject's deliveries (``_live_n`` of ``_live_subject``); a
        # connection that gets several subjects between two flushes keeps the counts of the
        # others in ``_live_others`` (only when the subject changes: never per delivery).
        self._live_n = 0
        self._live_subject = ""
        self._live_others: dict[str, int] | None = None
        self._slow = False  # closed as a slow consumer: what it is still due is "dropped"
        self._backlog_since: float | None = None  # tick the send buffer was last seen empty after

    @property
    def deadline(self) -> float | None:
        """Monotonic time after which the ticker cuts the connection (request timer, drain,
        close); setting one wakes the ticker's plan for it (server/transport/wheel.py)."""
        return self._deadline

    @deadline.setter
    def deadline(self, when: float | None) -> None:
        self._deadline = when
        if when is not None:
            self.ctx.connections.wake(self, when)

    def _to(self, event: ConnEvent) -> None:
        self._settle()
        self.state = next_state(self.state, event)
        self._held = False
        self.ctx.connections.wake(self, self.ctx.tick)  # what is due depends on the state

    def _shut(self) -> None:
        """Close the transport (what is buffered still leaves) and enter CLOSING."""
        if self.state is not _CLOSING and self.state is not _CLOSED:
            self._to(ConnEvent.CLOSE)
        if self.transport is not None:
            self.transport.close()

    # -- handing the transport to another protocol object -----------------------------------

    def _adopt(self, old: Connection) -> None:
        """Take ``old``'s transport and counters; ``old`` is out of use afterwards."""
        transport = old.transport
        if transport is None:
            raise RuntimeError("a connection without a transport cannot hand it over")
        self.transport, self.remote = transport, old.remote
        self.bytes_in, self.bytes_out = old.bytes_in, old.bytes_out
        self.last_in, self.last_out = old.last_in, old.last_out
        old.transport = None
        connections = self.ctx.connections
        connections.discard(old)
        connections.add(self)
        transport.set_protocol(self)

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_lost(self, exc: Exception | None) -> None:
        if self.state is not _CLOSED:
            self._to(ConnEvent.LOST)
        self.ctx.connections.discard(self)
        if self._live_n or self._live_others:  # queued, never flushed
            self._discard()
        if self.session is not None:
            self.ctx.end_session(self.session)

    def pause_writing(self) -> None:
        # The write buffer passed MaxOutboundBufferSize: the client does not keep up.
        if self.state in SENDING:
            self._slow_consumer()

    # -- output (core.hub.Peer) -------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.session.id if self.session is not None else None

    def send(self, frame: OutFrame) -> None:
        """Queue one server frame (not a live delivery: a reply, a snapshot) as a WebSocket
        frame: the cached one every receiver of the message shares (:meth:`OutFrame.ws`)."""
        self.frames_out += 1
        self._enqueue(frame.ws_frame or frame.ws())

    def deliver(self, frame: OutFrame) -> None:
        """Queue a live delivery: accounted as written at the flush that writes it, or as
        dropped / closed when the connection discards it (core/accounting.py). The
        per-delivery path of every fan-out, kept short (ADR 058, ADR 068): while held, a
        frame of the current subject smaller than a unit is only appended; it is counted
        (a delivery, a unit) by :meth:`_settle`, the outbox's length telling how many came.
        Protocols that frame otherwise (SSE, deflate) use :meth:`deliver_through_send`."""
        if self._held:
            data = frame.ws_frame or frame.ws()
            if frame.subject == self._live_subject and len(data) < self._unit:
                outbox = self._outbox
                outbox.append(data)
                if len(outbox) > self._cap:  # the units passed OUTBOX_UNITS (see _enqueue)
                    self._settle()
                    if self._outbox_full():
                        self.flush()
                    else:
                        self._hold()
                return
            self._settle()
        if frame.subject != self._live_subject:
            self._live_switch(frame.subject)
        self._live_n += 1
        state = self.state
        if state is _CLOSING or state is _CLOSED:
            self._discard()
            return
        self._enqueue(frame.ws_frame or frame.ws())

    def deliver_through_send(self, frame: OutFrame) -> None:
        """:meth:`deliver` for a protocol with its own framing (SSE, deflate): they assign it
        as their ``deliver``."""
        self._settle()
        if frame.subject != self._live_subject:
            self._live_switch(frame.subject)
        self._live_n += 1
        state = self.state
        if state is _CLOSING or state is _CLOSED:
            self._discard()
            return
        self._enqueue(self.framed(frame))

    def deliver_all(self, frames: Sequence[OutFrame]) -> None:
        """:meth:`send_all` for live deliveries (a subscription's buffered updates)."""
        self._settle()
        for frame in frames:
            if frame.subject != self._live_subject:
                self._live_switch(frame.subject)
            self._live_n += 1
        if self.state is _CLOSING or self.state is _CLOSED:
            self._discard()
            return
        self._queue_all(frames)

    def _live_switch(self, subject: str) -> None:
        """The next live delivery is of another subject than the queued ones: keep their
        count aside (they are counted at the flush like the others)."""
        if self._live_n:
            others = self._live_others
            if others is None:
                others = self._live_others = {}
            previous = self._live_subject
            others[previous] = others.get(previous, 0) + self._live_n
            self._live_n = 0
        self._live_subject = subject

    def _count_live(self, column: int) -> None:
        """The queued live deliveries ended as ``column`` (written, dropped, closed): counted
        in the hub's tally per subject, and in ``frames_out``; the counts start again."""
        self._settle()
        n, others = self._live_n, self._live_others
        self._live_n, self._live_others = 0, None
        self.frames_out += n
        if others:
            self.frames_out += sum(others.values())
        session = self.session
        if session is None:
            return
        hub = session.hub
        if n:
            hub.count_outcome(self._live_subject, column, n)
        if others:
            for subject, count in others.items():
                hub.count_outcome(subject, column, count)

    def _discard(self) -> None:
        """The queued live deliveries will never be written: dropped (a slow consumer's) or
        closed (any other closing connection)."""
        self._settle()
        if self._live_n or self._live_others:
            self._count_live(DROPPED if self._slow else CLOSED)

    def framed(self, frame: OutFrame) -> bytes:
        """``frame`` as this protocol writes it (what :meth:`send` queues)."""
        return frame.ws_frame or frame.ws()

    def send_all(self, frames: Sequence[OutFrame]) -> None:
        """Queue one request's replies (a snapshot, recovered history). Together they may hold
        at most what the write buffer may hold: a client asking for more is a slow consumer
        (4001), and the server never holds more than that for one request."""
        if self.state is _CLOSING or self.state is _CLOSED:
            return
        self.frames_out += len(frames)
        self._queue_all(frames)

    def _queue_all(self, frames: Sequence[OutFrame]) -> None:
        framed = [self.framed(frame) for frame in frames]
        if sum(map(len, framed)) > self._limit:
            self._slow_consumer()
            return
        for data in framed:
            self._enqueue(data)

    def _enqueue(self, frame: bytes) -> None:
        """Queue the bytes of one frame as this protocol writes it."""
        state = self.state
        if state is _CLOSING or state is _CLOSED:
            return
        if self._held:  # (a call less per write when not)
            self._settle()
        ctx = self.ctx
        self._outbox.append(frame)
        self._held_from += 1  # counted by the caller, not by _settle (a flush may settle next)
        self._units += (len(frame) >> self._unit_shift) + 1  # (not per small delivery)
        if self._units > OUTBOX_UNITS and self._outbox_full():
            # Frames held back (a flush tick, a batch) reached what the write buffer may
            # hold: they leave now, and the write buffer decides who is a slow consumer.
            self.flush()
            return
        if self._held:
            self._hold()
            return
        batching = ctx.batching if self.batched else None
        if batching is not None:
            self._outbox_size += len(frame)
            if batching.max_size and self._outbox_size >= batching.max_size:
                self.flush()
                return
            if not self._marked:
                self._marked = True
                if batching.delay:
                    self._batch_due = ctx.flusher.mark_later(self, batching.delay)
                else:
                    ctx.flusher.mark(self)
        elif not self._marked:
            self._marked = self._held = True
            self._hold()
            ctx.flusher.mark(self)

    def _hold(self) -> None:
        """Held, everything in the outbox counted: how far :meth:`deliver` may append before
        the units pass OUTBOX_UNITS (``_cap``, in outbox entries)."""
        self._held_from = len(self._outbox)
        self._cap = self._held_from + OUTBOX_UNITS - self._units

    def _settle(self) -> None:
        """Count the frames :meth:`deliver` appended while held since the last count: each a
        live delivery of ``_live_subject`` and one unit (ADR 068). Whatever reads or changes
        the counts, the outbox or ``_held`` calls this first."""
        if self._held:
            held = len(self._outbox) - self._held_from
            if held:
                self._live_n += held
                self._units += held
                self._held_from += held

    def _outbox_full(self) -> bool:
        """The units passed OUTBOX_UNITS: are the queued bytes past the limit (exact)? If not,
        the units restart from the room left (``OUTBOX_UNITS - room >> shift``, at least 0),
        so they pass OUTBOX_UNITS again no later than the bytes pass the limit."""
        room = self._limit - sum(map(len, self._outbox))
        if room < 0:
            return True
        self._units = max(0, OUTBOX_UNITS - (room >> self._unit_shift))
        return False

    def flush_due(self, due: float) -> None:
        # A batch flushed early (BatchingMaxSize) must not cut the next batch's time short.
        if self._batch_due == due:
            self.flush()

    def flush(self) -> None:
        outbox = self._outbox
        if self._held:  # _settle inline (once per write); the units restart below
            self._live_n += len(outbox) - self._held_from
        self._marked = self._held = False
        self._batch_due = None
        transport = self.transport
        if not outbox or transport is None or transport.is_closing():
            outbox.clear()
            self._units = 0
            self._discard()
            return
        if len(outbox) == 1:
            data = outbox[0]
        elif self.batched and self.ctx.batching is not None:
            data = batch_frame(outbox)
        else:
            data = b"".join(outbox)
        outbox.clear()
        self._outbox_size = 0
        self._units = 0
        buffered = transport.get_write_buffer_size()
        if (buffered or self._backlog_since is not None) and not self._keeps_up(buffered, data):
            return
        # _write inline (once per write: the per-write Python is a sixth of a delivery)
        transport.write(data)
        size = len(data)
        self.bytes_out += size
        ctx = self.ctx
        if self.client_port:
            ctx.counters.bytes_out_total += size
        self.last_out = ctx.tick
        n = self._live_n
        if n and self._live_others is None and self.session is not None:
            # The common case, once per write: one subject's deliveries (_count_live inline,
            # a call less per write: the per-write Python is a sixth of a delivery, ADR 064).
            self._live_n = 0
            self.frames_out += n
            self.session.hub.count_outcome(self._live_subject, WRITTEN, n)
        elif n or self._live_others:  # the deliveries this write carried
            self._count_live(WRITTEN)

    def _keeps_up(self, buffered: int, data: bytes) -> bool:
        """Before a write with ``buffered`` bytes still in the write buffer: False if the
        client is a slow consumer (closed here, before the write: the close frame follows
        whole frames); the time the backlog began is noted, or forgotten once it is gone."""
        if not buffered:
            self._backlog_since = None
            return True
        if buffered + len(data) > self._limit:
            self._slow_consumer()
            return False
        if self._backlog_since is None:  # the client stopped keeping up (slow-consumer log)
            self._backlog_since = self.ctx.tick
        return True

    def _write(self, data: bytes) -> None:
        transport = self.transport
        if transport is None:
            return
        transport.write(data)
        self.bytes_out += len(data)
        if self.client_port:
            self.ctx.counters.bytes_out_total += len(data)
        self.last_out = self.ctx.tick

    def _count_in(self, size: int) -> None:
        self.bytes_in += size
        if self.client_port:  # monitoring traffic is not client traffic
            ctx = self.ctx
            ctx.counters.bytes_in_total += size
            ctx.flusher.heard += 1  # input still arrives: a resting flush waits (ADR 064)
        self.last_in = self.ctx.tick

    @property
    def queued_bytes(self) -> int:
        """Bytes waiting for the client: queued for the next flush and in the write buffer."""
        transport = self.transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return sum(map(len, self._outbox)) + buffered

    def _slow_consumer(self) -> None:
        """Record the close (the session's slow-consumer history), drop what is queued, send
        the 4001 close after the last whole frame already buffered, close once it is out, and
        cut after SlowConsumerCloseTimeout."""
        ctx = self.ctx
        ctx.counters.slow_consumer_disconnects_total += 1
        log.info("slow consumer %s (%s): closing", self.remote, self.session_id)
        if self.session is not None:
            self.session.hub.slow_consumers.record(
                self.session, self.queued_bytes, self._limit, self._wire_state()
            )
        self._slow = True
        self._discard()  # what was queued is dropped with the slow consumer
        self._held = False  # (counted: nothing in the outbox is held any more)
        self._outbox.clear()
        self._outbox_size = 0
        self._units = 0
        self.close(CloseCode.SLOW_CONSUMER, "slow consumer: outbound buffer full")
        if self.transport is not None:
            self.transport.close()  # sends what is buffered (close frame last), then FIN
        self.deadline = ctx.tick + ctx.limits.slow_consumer_close_timeout

    def _wire_state(self) -> WireState:
        since = self._backlog_since
        return WireState(
            compressed=self.compressed,
            queued=self._queued_subjects(),
            backlog_seconds=None if since is None else round(self.ctx.tick - since, 3),
            bytes_out=self.bytes_out,
        )

    def _queued_subjects(self) -> tuple[tuple[str, int], ...]:
        """(subject, live deliveries queued) for each subject queued since the last flush."""
        self._settle()
        counts = dict(self._live_others or {})
        if self._live_n:
            subject = self._live_subject
            counts[subject] = counts.get(subject, 0) + self._live_n
        return tuple(counts.items())

    def close(self, code: int, reason: str) -> None:
        """Stop sending: protocols with a close frame send it after what is queued."""
        self._shut()

    def abort(self) -> None:
        """Cut the connection: a reset, dropping what the kernel still holds for the client
        (a peer that never reads must not keep our socket buffers)."""
        if self.state is not _CLOSING and self.state is not _CLOSED:
            self._to(ConnEvent.CLOSE)
        if self.transport is not None:
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            self.transport.abort()

    def ping(self) -> None:
        """A protocol-level ping, where the protocol has one (WebSocket)."""

    # -- sessions ---------------------------------------------------------------------------

    def _session_refusal(self) -> tuple[int, str] | None:
        """Why no session may open now (the close code and reason), or None."""
        ctx = self.ctx
        if ctx.stopping:
            return CloseCode.GOING_AWAY, "server shutting down"
        if ctx.counters.sessions >= ctx.limits.max_connections:
            return CloseCode.CONNECTION_LIMIT, "connection limit"
        return None

    def _open_session(self, head: bytes, token: str | None) -> bool:
        """Send ``head`` (the 101 answer or the event stream's response head) and open the
        session. The head and the welcome leave in one write: a system call less per client."""
        refusal = self._session_refusal()
        if refusal is not None:
            self._write(head)
            self.close(*refusal)
            return False
        session = self.session = self.ctx.open_session(self, token, self.remote)
        session.welcome()  # queued in the outbox
        outbox = self._outbox
        if len(outbox) == 1:
            head += outbox[0]
            outbox.clear()
            self._units = self._outbox_size = 0
            if self._held:
                self._hold()
        self._write(head)  # anything else queued follows at the flush
        return True
