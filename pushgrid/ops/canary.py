"""The Canary MBean (``pushgrid:type=Canary``): the canaries one member receives (ADR 049).

Each member publishes a canary once a second and follows every member's through its delivery
path; ``Pairs`` holds one entry per publisher: the pair ``publisher -> this member``, the age of
its last canary, its latency and whether it is stale (docs/monitoring.md, "Canaries"). The admin
API joins every member's ``Pairs`` into the member-by-member matrix (``GET
/api/v1/delivery/canaries``).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from .attributes import LIST, STRING, java


class CanaryPairEntry(msgspec.Struct, rename="camel", frozen=True, kw_only=True):
    """One entry of ``Pairs``: a publisher's canaries as this member receives them."""

    publisher: str
    receiver: str
    age_seconds: float | None  # since the last one arrived; None: none yet
    latency_seconds: float | None  # publisher's clock at publishing -> arrival here
    received: int
    stale: bool


class CanaryDocument(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """Every attribute of the Canary MBean, in its order."""

    member: Annotated[str, java(STRING, "This member (the receiver of every pair)")]
    enabled: Annotated[bool, java("boolean", "Canary.Enabled")]
    interval: Annotated[float, java("double", "Seconds between two canaries of a member")]
    stale_after: Annotated[float, java("double", "Seconds without a canary: the pair is stale")]
    published: Annotated[int, java("long", "Canaries this member published")]
    publish_failures: Annotated[int, java("long", "Canaries refused, failed or skipped")]
    stale_pairs: Annotated[int, java("int", "Pairs to this member without a recent canary")]
    pairs: Annotated[
        list[CanaryPairEntry],
        java(LIST, "Per publisher: ageSeconds, latencySeconds, received, stale"),
    ]
