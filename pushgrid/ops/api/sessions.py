"""Client sessions across the members (``GET /sessions``, ``GET /members/{name}/sessions``): one
page of them, and the members that could not be read."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

SessionTransport = Literal["websocket", "sse"]


class Page(BaseModel):
    total: int = Field(ge=0, description="Items matching the filters (all pages)")
    offset: int = Field(ge=0)
    limit: int = Field(ge=1)


class SessionOut(BaseModel):
    member: str
    id: str
    remote: str = Field(description="Remote address, host:port")
    connected_since: datetime
    subjects: list[str]
    messages_in: int = Field(description="Publishes accepted from the client")
    bytes_in: int
    bytes_out: int
    client_id: str = Field(
        default="",
        description="The token's sub when the token names one, else the client_id the client "
        "declared when subscribing; empty when it declared none (the session id identifies it)",
    )
    transport: SessionTransport = Field(default="websocket", description="websocket or sse")
    compression: bool = Field(default=False, description="permessage-deflate agreed")
    messages_out: int = Field(default=0, description="Message frames queued for the client")
    outbound_buffer_bytes: int = Field(
        default=0, description="Bytes queued and not yet written to the client's socket"
    )
    internal: bool = Field(
        default=False,
        description="A probe of the admin API or a canary (connected with internal=1), not a "
        "user: left out of lists and counts unless internal=include or only",
    )
    delivery_latency_ms: float | None = Field(
        default=None,
        description="Median delivery latency the client reported since it connected (ms, the "
        "upper bound of its histogram bucket); null when it has not reported",
    )
    lost_messages: int | None = Field(
        default=None,
        description="Losses the client reported since it connected: resyncs and failed "
        "recoveries (gaps it recovered are not losses); null when it has not reported",
    )

    @property
    def subject_count(self) -> int:
        return len(self.subjects)


class MemberError(BaseModel):
    member: str
    error: str


class SessionPage(Page):
    items: list[SessionOut]
    internal_hidden: int = Field(
        default=0, description="Internal sessions (probes) the internal filter left out"
    )
    unreachable: list[MemberError] = Field(
        default_factory=list, description="Members whose sessions could not be read"
    )

    @property
    def errors(self) -> dict[str, str]:
        """The members that could not be read -> why."""
        return {failure.member: failure.error for failure in self.unreachable}
