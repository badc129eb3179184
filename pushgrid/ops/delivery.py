"""The Delivery MBean (``pushgrid:type=Delivery``): what the clients report of their deliveries.

End-to-end latency (ingress member to the subscriber's receipt, as the clients measure it:
docs/protocol.md 5.7) over the last ``Window`` seconds, as percentiles and as the histogram's
buckets (protocol/latency.py), so the admin API merges members exactly; the server's own legs;
the loss counters the clients report. Buckets travel as text (``"31:120 32:7"``: index:count of
the non-empty buckets), never as arrays: jmxquery (the JMX bridge's readers) prints no arrays
(the same reason as the Server MBean's ``Settings``, ops/server.py).
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec

from pushgrid.protocol.latency import BUCKET_COUNT, LEGS, LOSS_KINDS, PERCENTILES, quantile_of

from .attributes import MAP, STRING, java

__all__ = ["LEGS", "LOSS_KINDS", "DeliveryDocument"]


def bucket_text(counts: list[int]) -> str:
    """A histogram's counts as ``"index:count ..."`` of its non-empty buckets."""
    return " ".join(f"{i}:{n}" for i, n in enumerate(counts) if n)


def text_counts(text: str) -> list[int]:
    """The inverse of :func:`bucket_text` (ValueError on a text that is not one)."""
    counts = [0] * BUCKET_COUNT
    for item in text.split():
        index, _, count = item.partition(":")
        i, n = int(index), int(count)
        if not 0 <= i < BUCKET_COUNT or n < 0:
            raise ValueError(f"not a latency bucket: {item!r}")
        counts[i] += n
    return counts


def percentiles(counts: list[int]) -> dict[str, float | None]:
    """p50, p90, p99, p999 in seconds of bucket counts (None without samples)."""
    total = sum(counts)
    return {name: quantile_of(counts, total, q) for name, q in PERCENTILES}


Percentile = Annotated[float | None, java("double", "Seconds (bucket upper bound), null: none")]


class DeliveryDocument(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """Every attribute of the Delivery MBean, in its order."""

    window: Annotated[int, java("int", "Seconds the recent numbers cover")]
    latency_count: Annotated[int, java("long", "Latencies reported in the window")]
    latency_p50: Percentile
    latency_p90: Percentile
    latency_p99: Percentile
    latency_p999: Percentile
    latency_buckets: Annotated[
        str, java(STRING, "The window's latency buckets, 'index:count' of the non-empty ones")
    ]
    loss: Annotated[
        dict[str, int],
        java(MAP, "Loss counters reported in the window: gaps, duplicates, resyncs, ..."),
    ]
    loss_total: Annotated[dict[str, int], java(MAP, "Loss counters reported since start")]
    reports: Annotated[int, java("long", "Reports accepted since start")]
    rejected_reports: Annotated[int, java("long", "Reports refused (invalid_report) since start")]
    leg_buckets: Annotated[
        dict[str, str], java(MAP, "The server's own legs in the window: leg -> buckets")
    ]
    pattern_buckets: Annotated[
        dict[str, str], java(MAP, "Watched pattern -> the window's latency buckets")
    ]
    pattern_loss: Annotated[
        dict[str, str],
        java(MAP, "Watched pattern -> the window's loss counters, space-separated in LOSS order"),
    ]
    latency_total_buckets: Annotated[
        str,
        java(STRING, "Latency buckets since start, 'index:count' (the SLOs' good/total events)"),
    ] = ""
    pattern_total_buckets: Annotated[
        dict[str, str],
        java(MAP, "Watched pattern -> its latency buckets since start (a pattern's SLOs)"),
    ] = msgspec.field(default_factory=dict)
    pattern_loss_total: Annotated[
        dict[str, str],
        java(
            MAP, "Watched pattern -> its loss counters since start, space-separated in LOSS order"
        ),
    ] = msgspec.field(default_factory=dict)


class DeliveryTotals(msgspec.Struct, rename="pascal", frozen=True):
    """What the SLO recorder reads (ADR 055): the cumulative latency buckets and loss counters
    (an admin API takes the increase between two looks, so nothing between them is missed)."""

    latency_total_buckets: str
    loss_total: dict[str, int]
    # per watched pattern (a member of an earlier version has none)
    pattern_total_buckets: dict[str, str] = msgspec.field(default_factory=dict)
    pattern_loss_total: dict[str, str] = msgspec.field(default_factory=dict)


class DeliveryLoss(msgspec.Struct, rename="pascal", frozen=True):
    """What the ``client_loss`` alert signal reads: the window's loss counters."""

    window: int
    loss: dict[str, int]


EMPTY_DELIVERY: Final = DeliveryDocument(
    window=0,
    latency_count=0,
    latency_p50=None,
    latency_p90=None,
    latency_p99=None,
    latency_p999=None,
    latency_buckets="",
    loss=dict.fromkeys(LOSS_KINDS, 0),
    loss_total=dict.fromkeys(LOSS_KINDS, 0),
    reports=0,
    rejected_reports=0,
    leg_buckets=dict.fromkeys(LEGS, ""),
    pattern_buckets={},
    pattern_loss={},
    latency_total_buckets="",
)


def loss_text(loss: dict[str, int]) -> str:
    return " ".join(str(loss.get(kind, 0)) for kind in LOSS_KINDS)


def text_loss(text: str) -> dict[str, int]:
    values = [int(v) for v in text.split()]
    if len(values) != len(LOSS_KINDS) or min(values, default=0) < 0:
        raise ValueError(f"not {len(LOSS_KINDS)} loss counters: {text!r}")
    return dict(zip(LOSS_KINDS, values, strict=True))
