"""Bodies of ``GET /api/v1/delivery/canaries`` (issue 33 item 3, ADR 049)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CanaryPairOut(BaseModel):
    """One cell of the matrix: ``publisher``'s canaries as ``receiver`` gets them."""

    publisher: str
    receiver: str
    age_seconds: float | None = Field(description="Since the last canary arrived; null: none yet")
    latency_seconds: float | None = Field(
        description="Publisher's clock at publishing to the receiver's at arrival; null: none yet"
    )
    received: int = Field(description="Canaries of the publisher the receiver got since it started")
    stale: bool = Field(description="No canary for `stale_after` seconds")


class CanaryReceiverOut(BaseModel):
    """A member as a receiver (its MBean ``pushgrid:type=Canary``)."""

    member: str
    reachable: bool
    error: str | None = None
    enabled: bool | None = None
    published: int | None = Field(default=None, description="Canaries it published")
    publish_failures: int | None = None
    stale_pairs: int | None = None


class CanaryProbeOut(BaseModel):
    """The admin API's own subscriber on the member's client port: the canaries it receives."""

    member: str
    connected: bool
    url: str | None = Field(default=None, description="The client URL the probe connects to")
    error: str | None = None
    age_seconds: float | None = Field(description="Since the probe's last canary; null: none yet")
    latency_seconds: float | None = Field(
        description="Publisher's clock to the admin API's arrival of that canary"
    )
    received: int
    stale: bool


class CanaryMatrixOut(BaseModel):
    """Every member pair publisher -> receiver, and the admin API's probes."""

    interval: float = Field(description="Seconds between two canaries of a member")
    stale_after: float = Field(description="Seconds without a canary: the pair is stale")
    members: list[str] = Field(description="Rows and columns of the matrix, by name")
    receivers: list[CanaryReceiverOut]
    pairs: list[CanaryPairOut] = Field(description="Receivers that could be read, by pair")
    stalled: list[str] = Field(
        description="Stale pairs `publisher->receiver` (a down publisher's pairs included)"
    )
    probes: list[CanaryProbeOut] = Field(default_factory=list)
