"""The transport's part: the bounds and timeouts of the client port's connections."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TransportSettings(BaseModel):
    """What the connections read (``TransportLimits``), the pending-connection bounds
    (``PendingConnections``), the write path's tick (``Flusher``) and shutdown."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    max_connections: int = Field(default=100_000, ge=1, alias="MaxConnections")
    # Connection and HTTP limits harden the client port; every key and its default is in
    # docs/configuration.md and docs/security.md.
    max_pending_connections: int = Field(default=4096, ge=1, alias="MaxPendingConnections")
    max_pending_connections_per_address: int = Field(
        default=2048, ge=1, alias="MaxPendingConnectionsPerAddress"
    )
    http_header_timeout: float = Field(default=10.0, gt=0, alias="HttpHeaderTimeout")
    max_http_header_size: int = Field(default=16 * 1024, ge=1024, alias="MaxHttpHeaderSize")
    max_http_headers: int = Field(default=64, ge=8, alias="MaxHttpHeaders")
    max_outbound_buffer_size: int = Field(
        default=4 * 1024 * 1024, ge=1024, alias="MaxOutboundBufferSize"
    )
    # bytes of received messages a connection may hold before they are handled: past it, its
    # socket is no longer read (and nothing more inflated) until they are (docs/security.md)
    max_inbound_buffer_size: int = Field(default=1024 * 1024, ge=1024, alias="MaxInboundBufferSize")
    # the write path: how long the loop may hold queued frames to share one write (ADR 012)
    flush_tick: float = Field(default=5.0, ge=0, le=1000, alias="FlushTick")
    shutdown_timeout: float = Field(default=5.0, ge=0, alias="ShutdownTimeout")
    slow_consumer_close_timeout: float = Field(default=5.0, ge=0, alias="SlowConsumerCloseTimeout")
