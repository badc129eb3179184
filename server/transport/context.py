"""What a connection needs from the server, and nothing more (ADR 013).

:class:`ConnectionContext` is the narrow interface the protocol objects of server/transport/ see,
as :class:`~server.core.hub.Peer` is what the hub sees of a connection. ``PushServer`` satisfies
it; unit tests pass a small fake. The numbers a connection reads are copied once into the frozen
:class:`TransportLimits`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pushgrid.config import BatchingSettings, DeflateSettings, TransportSettings
from pushgrid.metrics.counters import Counters

from ..framing.deflate import Agreement, Compressor, DeflateOptions, negotiate
from .flusher import Flusher
from .inflating import InflatingBudget
from .limits import PendingConnections, SecurityCounters
from .wheel import ConnectionSet

if TYPE_CHECKING:
    from ..core.hub import Peer
    from ..core.session import Session
    from .connection import Connection


@dataclass(frozen=True, slots=True)
class Batching:
    """Spec 5.6: queued messages of a connection leave together after ``delay`` seconds or once
    ``max_size`` bytes are waiting, as one frame holding a JSON array (docs/protocol.md)."""

    delay: float
    max_size: int

    @staticmethod
    def from_settings(settings: BatchingSettings) -> Batching | None:
        if settings.batching_time == 0 and settings.batching_max_size == 0:
            return None
        return Batching(settings.batching_time / 1000.0, settings.batching_max_size)


class Deflate:
    """permessage-deflate as configured (ADR 028): the answer to a client's offer, the shared
    compressors, and how many connections keep zlib state (at most ``max_contexts``; past it
    new connections agree to no context takeover either way, which keeps none).

    Counted for monitoring (ADR 032): ``contexts`` in use now, and, over the data frames sent
    on connections that agreed, the bytes their plain frames would have taken
    (``uncompressed_bytes``) and the bytes written instead (``compressed_bytes``; a frame
    below ``DeflateMinSize`` or one that would not shrink counts the same in both).
    ``inflating`` bounds what the connections' unfinished compressed messages inflated.
    """

    __slots__ = (
        "_shared",
        "compressed_bytes",
        "contexts",
        "inflating",
        "max_contexts",
        "options",
        "uncompressed_bytes",
    )

    def __init__(
        self, options: DeflateOptions, max_contexts: int, inflating: InflatingBudget
    ) -> None:
        self.options = options
        self.max_contexts = max_contexts
        self.inflating = inflating
        self.contexts = 0
        self.uncompressed_bytes = 0
        self.compressed_bytes = 0
        self._shared: dict[int, Compressor] = {}

    @staticmethod
    def from_settings(settings: DeflateSettings) -> Deflate | None:
        if not settings.per_message_deflate:
            return None
        options = DeflateOptions(
            server_no_context_takeover=settings.deflate_server_no_context_takeover,
            client_no_context_takeover=settings.deflate_client_no_context_takeover,
            max_window_bits=settings.deflate_max_window_bits,
            min_size=settings.deflate_min_size,
            level=settings.deflate_level,
        )
        inflating = InflatingBudget(
            settings.deflate_max_inflating, settings.deflate_max_inflating_per_address
        )
        return Deflate(options, settings.deflate_max_contexts, inflating)

    def negotiate(self, offers: str) -> Agreement | None:
        return negotiate(offers, self.options, self.contexts < self.max_contexts)

    def shared(self, bits: int) -> Compressor:
        """The process's compressor for frames without context (one per window size)."""
        compressor = self._shared.get(bits)
        if compressor is None:
            compressor = self._shared[bits] = Compressor(self.options, bits, keep=False)
        return compressor


@dataclass(frozen=True, slots=True)
class TransportLimits:
    """The settings a connection reads (seconds and bytes), see docs/configuration.md."""

    max_http_header_size: int
    max_http_headers: int
    max_http_body: int
    http_header_timeout: float
    max_outbound_buffer_size: int
    slow_consumer_close_timeout: float
    shutdown_timeout: float
    finish_timeout: float
    max_connections: int
    max_frame_size: int
    max_inbound_buffer_size: int

    @staticmethod
    def from_settings(
        settings: TransportSettings, max_frame_size: int, publish_timeout: float
    ) -> TransportLimits:
        """``max_frame_size``: the session's hard frame limit (also the HTTP body's);
        ``publish_timeout``: how long a publish may wait for the engine (the cluster's)."""
        return TransportLimits(
            max_http_header_size=settings.max_http_header_size,
            max_http_headers=settings.max_http_headers,
            max_http_body=max_frame_size,
            http_header_timeout=settings.http_header_timeout,
            max_outbound_buffer_size=settings.max_outbound_buffer_size,
            slow_consumer_close_timeout=settings.slow_consumer_close_timeout,
            shutdown_timeout=settings.shutdown_timeout,
            # after the client's close frame, the requests it sent before may take as long as
            # a publish may wait for the cluster, and the answers ShutdownTimeout to leave
            finish_timeout=publish_timeout + settings.shutdown_timeout,
            max_connections=settings.max_connections,
            max_frame_size=max_frame_size,
            max_inbound_buffer_size=settings.max_inbound_buffer_size,
        )


class ConnectionContext(Protocol):
    """The server as a connection sees it."""

    @property
    def limits(self) -> TransportLimits: ...

    @property
    def tick(self) -> float:
        """The ticker's clock (loop.time() of its last round): cheap "now" for timestamps."""

    @property
    def stopping(self) -> bool: ...

    def isolation(self) -> str | None:
        """Why this member refuses new sessions (cut off from its cluster), or None."""

    @property
    def counters(self) -> Counters: ...

    @property
    def security(self) -> SecurityCounters: ...

    @property
    def pending(self) -> PendingConnections: ...

    @property
    def batching(self) -> Batching | None: ...

    @property
    def flusher(self) -> Flusher: ...

    @property
    def deflate(self) -> Deflate | None:
        """permessage-deflate, or None when ``PerMessageDeflate`` is off."""

    @property
    def connections(self) -> ConnectionSet[Connection]:
        """Every open connection object (the ticker and shutdown walk it)."""

    def track(self, task: asyncio.Task[Any] | Coroutine[Any, Any, Any]) -> None:
        """Keep a task alive until it ends (and cancel it at shutdown)."""

    def open_session(self, peer: Peer, token: str | None, remote: str) -> Session:
        """A new session for ``peer``, registered in the hub (not yet welcomed)."""

    def end_session(self, session: Session) -> None:
        """Close ``session`` and remove it from the hub."""
