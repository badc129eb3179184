"""The canaries as the monitoring views show them (ADR 049): MBean ``pushgrid:type=Canary``,
Prometheus gauges per pair, and the ``canaries`` section of ``/stats``.

Every view formats the same :class:`~metrics.canary.CanaryState` (server/canary.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import msgspec
from prometheus_client.core import GaugeMetricFamily, Metric

from pushgrid.metrics.canary import CANARY_INTERVAL, STALE_AFTER, CanaryPair, CanaryState
from pushgrid.ops import names
from pushgrid.ops.canary import CanaryDocument, CanaryPairEntry

from .mbeans import MBean, ObjectName, Operation, document_attributes
from .numbers import number_text


class CanarySource(Protocol):
    def canary_state(self) -> CanaryState: ...

    def canary_probe_key(self) -> str: ...


def pair_entry(pair: CanaryPair) -> CanaryPairEntry:
    return CanaryPairEntry(
        publisher=pair.publisher,
        receiver=pair.receiver,
        age_seconds=pair.age,
        latency_seconds=pair.latency,
        received=pair.received,
        stale=pair.stale,
    )


def canary_document(state: CanaryState) -> CanaryDocument:
    """The Canary MBean's document (pushgrid/ops/canary.py)."""
    return CanaryDocument(
        member=state.member,
        enabled=state.enabled,
        interval=CANARY_INTERVAL,
        stale_after=STALE_AFTER,
        published=state.published,
        publish_failures=state.publish_failures,
        stale_pairs=state.stale_pairs,
        pairs=[pair_entry(pair) for pair in state.pairs],
    )


def canary_bean(source: CanarySource, wrap: Callable[[Callable[[], Any]], Any]) -> MBean:
    return MBean(
        ObjectName.parse(names.CANARY),
        "The canaries this member receives from every member",
        document_attributes(CanaryDocument, lambda: canary_document(source.canary_state()), wrap),
        [
            Operation(
                names.CANARY_PROBE_KEY,
                [],
                "java.lang.String",
                "The token of the admin API's probe: its session is internal (not a user) and "
                "may only subscribe to /pushgrid/canary",
                wrap(source.canary_probe_key),
            )
        ],
    )


def stats_section(state: CanaryState) -> dict[str, Any]:
    """``/stats?format=json``'s ``canaries``: the MBean's document, camelCase keys."""
    document: dict[str, Any] = msgspec.to_builtins(canary_document(state))
    return {key[0].lower() + key[1:]: value for key, value in document.items()}


def stats_lines(section: dict[str, Any]) -> Iterator[str]:
    """``/stats`` text: ``canary.<publisher>.<age_seconds|latency_seconds|stale> value`` (U:
    none yet), plus the member's own counts."""
    if not section:
        return
    yield f"canary_published_total {section['published']}"
    yield f"canary_publish_failures_total {section['publishFailures']}"
    yield f"canary_stale_pairs {section['stalePairs']}"
    for pair in section["pairs"]:
        prefix = f"canary.{pair['publisher']}"
        for key, name in (("ageSeconds", "age_seconds"), ("latencySeconds", "latency_seconds")):
            value = pair[key]
            yield f"{prefix}.{name} {'U' if value is None else number_text(value)}"
        yield f"{prefix}.stale {1 if pair['stale'] else 0}"


def canary_metrics(state: CanaryState) -> Iterator[Metric]:
    """Per pair (``publisher``, ``receiver`` = this member): the age of the last canary, its
    latency, whether it is stale; a pair with no canary yet has no age or latency sample."""
    labels = ["publisher", "receiver"]
    age = GaugeMetricFamily(
        "pushgrid_canary_age_seconds",
        "Seconds since the publisher's last canary arrived",
        labels=labels,
    )
    latency = GaugeMetricFamily(
        "pushgrid_canary_latency_seconds",
        "Latency of the publisher's last canary (publisher's clock to arrival here)",
        labels=labels,
    )
    stale = GaugeMetricFamily(
        "pushgrid_canary_stale",
        "1 while the pair has had no canary for the stale time",
        labels=labels,
    )
    for pair in state.pairs:
        key = [pair.publisher, pair.receiver]
        if pair.age is not None:
            age.add_metric(key, pair.age)
        if pair.latency is not None:
            latency.add_metric(key, pair.latency)
        stale.add_metric(key, 1 if pair.stale else 0)
    yield age
    yield latency
    yield stale
    yield GaugeMetricFamily(
        "pushgrid_canaries_published", "Canaries this member published", value=state.published
    )
