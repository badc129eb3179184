"""Hot subjects: the top subjects of a member by message and byte rates and by subscribers.

The hub counts, on its hot path, per-subject deltas in a plain dict (``subject -> [messages in,
messages out, bytes out]``, see :class:`~server.core.hub.Hub`). Once a second the sampler calls
:meth:`HotSubjects.fold`, which takes that dict, decays three :class:`SpaceSaving` sketches by
``a = exp(-1 / window)`` and adds the deltas: each sketch's ``count * (1 - a)`` is then an
exponentially weighted rate per second over about ``window`` seconds. Memory: ``capacity``
counters per sketch, whatever the number of subjects (plus the deltas of one second, which the
hub caps at ``capacity`` subjects by folding early).

Subscribers are a gauge, not a stream: their ranking is exact, from the hub's subscription
tables (``heapq.nlargest``, extra memory O(top_n)), refreshed every ``SUBSCRIBER_EVERY`` folds.

Every ranking lists at most ``top_n`` subjects, each with its estimate, its error bound and a
short history (the last ``HISTORY`` per-second estimates, for sparklines).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Final, Protocol

from .heavy_hitters import SpaceSaving

RANKINGS: Final = ("messages_in", "messages_out", "bytes_out")
RANKING_UNITS: Final = {
    "messages_in": "messages/s",
    "messages_out": "messages/s",
    "bytes_out": "bytes/s",
    "subscribers": "subscribers",
}
HISTORY: Final = 60
SUBSCRIBER_EVERY: Final = 5


class TallySource(Protocol):
    """What :class:`HotSubjects` needs from the hub."""

    def take_tally(self) -> dict[str, list[int]]: ...

    def subscriber_counts(self) -> Iterable[tuple[str, int]]: ...


class HotSubjectSketches:
    def __init__(
        self, source: TallySource, top_n: int = 20, capacity: int = 1000, window: float = 10.0
    ) -> None:
        self.source = source
        self.top_n = top_n
        self.capacity = capacity
        self.window = window
        self.factor = math.exp(-1.0 / window)
        self.sketches = {name: SpaceSaving(capacity) for name in RANKINGS}
        self.subscribers: list[tuple[str, int]] = []
        self.ts = 0
        self._folds = 0
        # ranking -> subject -> recent rates; only for subjects in the current top_n
        self._history: dict[str, dict[str, deque[float]]] = {name: {} for name in RANKINGS}

    def absorb(self) -> None:
        """Add the hub's deltas without decaying (the hub's tally is full mid-second)."""
        for subject, (incoming, outgoing, size, *_) in self.source.take_tally().items():
            sketches = self.sketches
            sketches["messages_in"].add(subject, incoming)
            sketches["messages_out"].add(subject, outgoing)
            sketches["bytes_out"].add(subject, size)

    def fold(self, ts: int) -> None:
        """Once a second: decay, add the second's deltas, refresh histories and subscribers."""
        self.fold_seconds([ts])

    def fold_seconds(self, seconds: Sequence[int]) -> None:
        """The seconds one sampler reading completed (metrics.sampler): the hub's deltas of the
        reading's period are shared evenly among them, each second decaying once, so a reading
        after a blocked event loop is no bump in the rates (issue 21: rates are rates)."""
        if not seconds:
            return
        tally = self.source.take_tally()
        share = 1.0 / len(seconds)
        for ts in seconds:
            for sketch in self.sketches.values():
                sketch.decay(self.factor)
            for subject, (incoming, outgoing, size, *_) in tally.items():
                sketches = self.sketches
                sketches["messages_in"].add(subject, incoming * share)
                sketches["messages_out"].add(subject, outgoing * share)
                sketches["bytes_out"].add(subject, size * share)
            self._fold_done(ts)

    def _fold_done(self, ts: int) -> None:
        self.ts = ts
        if self._folds % SUBSCRIBER_EVERY == 0:
            self.subscribers = heapq.nlargest(
                self.top_n, self.source.subscriber_counts(), key=lambda pair: (pair[1], pair[0])
            )
        self._folds += 1
        for name in RANKINGS:
            self._remember(name)

    def rate(self, count: float) -> float:
        return count * (1.0 - self.factor)

    def _remember(self, name: str) -> None:
        history = self._history[name]
        top = self.sketches[name].top(self.top_n)
        keep = {entry.item for entry in top}
        for subject in list(history):
            if subject not in keep:
                del history[subject]
        for entry in top:
            series = history.get(entry.item)
            if series is None:
                series = history[entry.item] = deque(maxlen=HISTORY)
            series.append(round(self.rate(entry.count), 3))

    def ranking(self, name: str) -> list[dict[str, Any]]:
        """One ranking, largest first: subject, estimate, error bound, history."""
        if name == "subscribers":
            return [{"subject": s, "value": n, "error": 0} for s, n in self.subscribers]
        history = self._history[name]
        return [
            {
                "subject": entry.item,
                "value": round(self.rate(entry.count), 3),
                "error": round(self.rate(entry.error), 3),
                "history": list(history.get(entry.item, ())),
            }
            for entry in self.sketches[name].top(self.top_n)
        ]

    def error_bound(self, name: str) -> float:
        """The largest over-estimate any rate of ``name`` may hold: total / capacity, as a rate."""
        return round(self.rate(self.sketches[name].total / self.capacity), 3)

    def document(self) -> dict[str, Any]:
        rankings = {name: self.ranking(name) for name in (*RANKINGS, "subscribers")}
        return {
            "ts": self.ts,
            "top_n": self.top_n,
            "capacity": self.capacity,
            "window": self.window,
            "units": dict(RANKING_UNITS),
            "error_bounds": {name: self.error_bound(name) for name in RANKINGS},
            "rankings": rankings,
        }
