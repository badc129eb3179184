"""The delivery numbers (server/core/delivery.py) as every view reads them (ADR 048).

Once a second the app takes a :class:`DeliveryReading` of the hub's
:class:`~server.core.delivery.DeliveryBook` (on the event loop, where the book changes): the
Delivery MBean's document (recent window) and the cumulative totals Prometheus exports. The
views only format it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric

from pushgrid.ops.delivery import (
    EMPTY_DELIVERY,
    LEGS,
    DeliveryDocument,
    bucket_text,
    loss_text,
    percentiles,
    text_counts,
    text_loss,
)
from pushgrid.protocol.latency import LOSS_KINDS, UPPER

from ..core.delivery import WINDOW_SECONDS, DeliveryBook, DeliverySecond, DeliveryTally


@dataclass(frozen=True, slots=True)
class DeliveryReading:
    document: DeliveryDocument = EMPTY_DELIVERY
    latency: tuple[int, ...] = ()  # cumulative counts per bucket, the member's clients
    legs: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    patterns: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    loss: Mapping[str, int] = field(default_factory=dict)
    reports: int = 0
    rejected_reports: int = 0


NO_DELIVERY = DeliveryReading()


def read_delivery(book: DeliveryBook, watched: set[str]) -> DeliveryReading:
    """The book now; ``watched``: the patterns still on the WatchedSubjects list (an unwatched
    pattern's numbers stop being shown)."""
    recent = book.recent(WINDOW_SECONDS)
    counts = recent.member.latency.counts
    p = percentiles(counts)
    patterns = {k: v for k, v in recent.patterns.items() if k in watched}
    totals = {k: v for k, v in book.pattern_totals.items() if k in watched}
    document = DeliveryDocument(
        window=WINDOW_SECONDS,
        latency_count=recent.member.latency.count,
        latency_p50=p["p50"],
        latency_p90=p["p90"],
        latency_p99=p["p99"],
        latency_p999=p["p999"],
        latency_buckets=bucket_text(counts),
        loss=dict(recent.member.loss),
        loss_total=dict(book.totals.loss),
        reports=book.reports,
        rejected_reports=book.rejected_reports,
        leg_buckets={leg: bucket_text(h.counts) for leg, h in recent.legs.items()},
        pattern_buckets={k: bucket_text(t.latency.counts) for k, t in sorted(patterns.items())},
        pattern_loss={k: loss_text(t.loss) for k, t in sorted(patterns.items())},
        latency_total_buckets=bucket_text(book.totals.latency.counts),
        pattern_total_buckets={k: bucket_text(t.latency.counts) for k, t in sorted(totals.items())},
        pattern_loss_total={k: loss_text(t.loss) for k, t in sorted(totals.items())},
    )
    return DeliveryReading(
        document,
        tuple(book.totals.latency.counts),
        {leg: tuple(h.counts) for leg, h in book.legs.items()},
        {k: tuple(t.latency.counts) for k, t in totals.items()},
        dict(book.totals.loss),
        book.reports,
        book.rejected_reports,
    )


def _buckets(counts: tuple[int, ...]) -> list[tuple[str, float]]:
    """Cumulative ``le`` buckets in seconds (the last is +Inf)."""
    buckets: list[tuple[str, float]] = []
    running = 0
    for index, n in enumerate(counts):
        running += n
        le = repr(UPPER[index] / 1e6) if index < len(UPPER) else "+Inf"
        buckets.append((le, running))
    return buckets


def delivery_metrics(reading: DeliveryReading) -> Iterator[Metric]:
    """Prometheus: the clients' latency (member and per watched pattern), the server's legs,
    the clients' loss counters and the reports (cumulative: ``histogram_quantile`` over any
    range; no ``_sum``, the clients report buckets only)."""
    if reading.latency:
        yield HistogramMetricFamily(
            "pushgrid_delivery_latency_seconds",
            "End-to-end delivery latency the clients report (ingress to receipt)",
            buckets=_buckets(reading.latency),
        )
    pattern = HistogramMetricFamily(
        "pushgrid_delivery_pattern_latency_seconds",
        "End-to-end delivery latency the clients report, per watched pattern",
        labels=["pattern"],
    )
    for name, counts in sorted(reading.patterns.items()):
        pattern.add_metric([name], _buckets(counts), None)
    yield pattern
    legs = HistogramMetricFamily(
        "pushgrid_delivery_leg_seconds",
        "The server's own legs: publish_ack (ingress to the engine's acknowledgement), engine"
        " (ingress to this member's fan-out), fanout (the fan-out's own work)",
        labels=["leg"],
    )
    for leg in LEGS:
        if leg in reading.legs:
            legs.add_metric([leg], _buckets(reading.legs[leg]), None)
    yield legs
    loss = CounterMetricFamily(
        "pushgrid_delivery_client_events",
        "What the clients report seeing: gaps, duplicates, resyncs, recovered, recovery_failed",
        labels=["kind"],
    )
    for kind in LOSS_KINDS:
        loss.add_metric([kind], reading.loss.get(kind, 0))
    yield loss
    yield CounterMetricFamily(
        "pushgrid_delivery_reports", "Delivery reports accepted", value=reading.reports
    )
    yield CounterMetricFamily(
        "pushgrid_delivery_rejected_reports",
        "Delivery reports refused (invalid_report)",
        value=reading.rejected_reports,
    )


def _summary(counts: list[int]) -> dict[str, float | int | None]:
    return {"count": sum(counts), **percentiles(counts)}


def stats_section(document: DeliveryDocument) -> dict[str, object]:
    """The ``delivery`` section of /stats: the window's percentiles (seconds), loss, legs and
    watched patterns, from the Delivery MBean's document (the same numbers)."""
    return {
        "window": document.window,
        "latency": _summary(text_counts(document.latency_buckets)),
        "loss": dict(document.loss),
        "loss_total": dict(document.loss_total),
        "reports": document.reports,
        "rejected_reports": document.rejected_reports,
        "legs": {leg: _summary(text_counts(text)) for leg, text in document.leg_buckets.items()},
        "patterns": {
            pattern: {
                "latency": _summary(text_counts(text)),
                "loss": text_loss(document.pattern_loss.get(pattern, "")),
            }
            for pattern, text in document.pattern_buckets.items()
        },
    }


def stats_lines(section: Mapping[str, object]) -> list[str]:
    """/stats as text: ``delivery.latency.p99 0.00251`` ... (U: no sample)."""
    lines: list[str] = []

    def flat(prefix: str, value: object) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                flat(f"{prefix}.{key}", inner)
        else:
            lines.append(f"{prefix} {'U' if value is None else value}")

    flat("delivery", section)
    return lines


#: the delivery archive's columns after its text keys (``scope``, ``buckets``)
ARCHIVE_KEYS: tuple[str, ...] = ("scope", "buckets")
ARCHIVE_COLUMNS: tuple[str, ...] = ("count", *LOSS_KINDS)


def archive_lines(
    second: DeliverySecond, watched: set[str]
) -> list[tuple[tuple[str, str], dict[str, float]]]:
    """One second of the book as archive lines (metrics/archive.py ``DELIVERY``): the member,
    each leg and each watched pattern that saw something."""
    lines: list[tuple[tuple[str, str], dict[str, float]]] = []
    scopes: list[tuple[str, DeliveryTally]] = [("member", second.member)]
    scopes += [(f"pattern:{p}", t) for p, t in sorted(second.patterns.items()) if p in watched]
    for scope, tally in scopes:
        if tally.latency.count or any(tally.loss.values()):
            values = {"count": float(tally.latency.count)}
            values.update({kind: float(n) for kind, n in tally.loss.items()})
            lines.append(((scope, bucket_text(tally.latency.counts)), values))
    for leg, histogram in second.legs.items():
        if histogram.count:
            lines.append(
                ((f"leg:{leg}", bucket_text(histogram.counts)), {"count": histogram.count})
            )
    return lines


def meta_fields(document: DeliveryDocument) -> dict[str, str]:
    """The ``/pushgrid/<node>/delivery`` meta-subject's fields: /stats's ``delivery`` section
    flattened (``latency.p99``, ``loss.gaps``, ``legs.engine.p50`` ...; no field for a
    percentile without samples)."""
    fields: dict[str, str] = {}
    for line in stats_lines(stats_section(document)):
        name, _, value = line.partition(" ")
        if value != "U":
            fields[name.removeprefix("delivery.")] = value
    return fields
