"""Cost of watched subjects: ns per message with 0, 10 and 100 patterns, in one process.

    nice -n 5 .venv/bin/python benchmarks/watch_cost.py --repeat 5

A real :class:`~server.core.hub.Hub` receives, per message, what a server does: the publish
counted where it entered (``count_published``) and the fan-out (``deliver``) to ``fanout``
subscribers whose ``send`` appends to a list (cheaper than a connection, so the hub's share is
over-stated). Messages go round-robin over ``subjects`` subjects in ten groups
(``/bench/g<G>/s<I>``). Every ``--rate`` messages is one simulated second: the sampler's work
for the watched patterns runs then, in full (:meth:`WatchFeed.read`: the hub's tally absorbed
through the subject -> patterns cache, subscriptions walked for the gauges, one
:class:`~metrics.indicators.PerSecond` reading and window sample per pattern, windows read
round-robin within the budget), so its cost is amortized over that second's messages.

Patterns: 0 (the reference, measured in the same run); 10 (``/bench/g<G>/*``: each subject in
one); 100 (those 10, 45 ``/bench/*/s<K>`` and 45 that match nothing). Timings use
``time.process_time`` after ``--warm`` readings (steady state: the 15-minute window's 900
seconds filled), alternate the cases and keep the best of ``--repeat`` rounds. Output: one
JSON line per case: ns per message (hot path + amortized second), the per-second work alone in
ms, and the ratio to the 0-pattern case. ``--memory N`` adds the memory of one pattern after N
one-second readings (tracemalloc).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pushgrid.metrics.counters import Counters  # noqa: E402
from pushgrid.server.core.hub import Hub  # noqa: E402
from pushgrid.server.core.watch import WatchFeed, Watchlist  # noqa: E402
from pushgrid.server.engine.base import Published  # noqa: E402
from pushgrid.server.engine.memory import MemoryEngine  # noqa: E402

GROUPS = 10


class Sub:
    """A subscriber key (the hub maps sessions to their send)."""


def patterns(count: int) -> list[str]:
    groups = [f"/bench/g{g}/*" for g in range(GROUPS)]
    extra = [f"/bench/*/s{k}" for k in range(45)] + [f"/none/{k}/*" for k in range(45)]
    return (groups + extra)[:count]


def build(count: int, fanout: int, subjects: int) -> tuple[Hub, WatchFeed, list[Any], list[Any]]:
    hub = Hub(MemoryEngine(), Counters())
    watchlist = Watchlist(cap=max(count, 1))
    for pattern in patterns(count):
        watchlist.add(pattern, "config")
    feed = WatchFeed(hub, watchlist)
    sink: list[Any] = []
    messages = []
    for index in range(subjects):
        subject = f"/bench/g{index % GROUPS}/s{index // GROUPS}"
        live: dict[Any, Any] = {Sub(): sink.append for _ in range(fanout)}
        hub._live[subject] = live  # subscribers without sessions: the fan-out loop only
        message = Published(subject, "x" * 100, {}, True, "guaranteed", "e", 1, 0)
        # the hub encodes the update once per message in deliver() (ADR 024)
        messages.append(message)
    return hub, feed, messages, sink


class Case:
    """One number of patterns: a hub and its watchlist, warmed up, timed round after round."""

    def __init__(self, count: int, fanout: int, subjects: int, warm: int) -> None:
        self.hub, self.feed, self.messages, self.sink = build(count, fanout, subjects)
        self.second = 0
        # steady state: the windows' rings full (the 15-minute one holds 900 samples)
        for _ in range(warm + 1):
            self.read()

    def read(self) -> None:
        self.feed.read(1_700_000_000.0 + self.second, float(self.second))
        self.second += 1

    def measure(self, seconds: int, rate: int) -> tuple[float, float]:
        """(total process seconds, process seconds spent in the per-second readings)."""
        deliver, count_in, messages = self.hub.deliver, self.hub.count_published, self.messages
        subjects = len(messages)
        per_second = 0.0
        start = time.process_time()
        for _ in range(seconds):
            for index in range(rate):
                message = messages[index % subjects]
                count_in(message.subject, 100)
                deliver(message)
            self.sink.clear()
            tick = time.process_time()
            self.read()
            per_second += time.process_time() - tick
        return time.process_time() - start, per_second


def pattern_memory(readings: int) -> int:
    """Bytes held by one pattern's statistics after ``readings`` one-second readings."""
    hub = Hub(MemoryEngine(), Counters())
    watchlist = Watchlist()
    feed = WatchFeed(hub, watchlist)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    watchlist.add("/bench/g0/*")
    for second in range(readings):
        hub.count_published("/bench/g0/s0", second % 97)
        feed.read(1_700_000_000.0 + second, float(second))
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=20, help="simulated seconds per round")
    parser.add_argument("--rate", type=int, default=20_000, help="messages per simulated second")
    parser.add_argument("--fanout", type=int, default=1)
    parser.add_argument("--subjects", type=int, default=1000)
    parser.add_argument("--warm", type=int, default=900, help="readings before the timing")
    parser.add_argument(
        "--memory", type=int, default=0, help="readings for the memory of one pattern (0: no)"
    )
    options = parser.parse_args()
    cases = {
        count: Case(count, options.fanout, options.subjects, options.warm) for count in (0, 10, 100)
    }
    best = {count: (float("inf"), 0.0) for count in cases}
    for _ in range(options.repeat):
        for count, case in cases.items():
            total, reading = case.measure(options.seconds, options.rate)
            if total < best[count][0]:
                best[count] = (total, reading)
    messages = options.seconds * options.rate
    reference = best[0][0]
    for count, (total, reading) in best.items():
        line = {
            "patterns": count,
            "messages": messages,
            "rate_per_s": options.rate,
            "fanout": options.fanout,
            "subjects": options.subjects,
            "ns_per_message": round(total / messages * 1e9, 1),
            "hot_path_ns_per_message": round((total - reading) / messages * 1e9, 1),
            "reading_ms_per_second": round(reading / options.seconds * 1e3, 3),
            "ratio_to_0_patterns": round(total / reference, 4),
        }
        print(json.dumps(line), flush=True)
    if options.memory:
        size = pattern_memory(options.memory)
        print(json.dumps({"readings": options.memory, "pattern_memory_bytes": size}), flush=True)


if __name__ == "__main__":
    main()
