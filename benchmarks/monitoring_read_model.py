"""What the monitoring read model costs (ADR 014), measured in one run.

* the sampler's per-second work to publish the read model (window readings of 7 indicators x 12
  windows, and the hot-subject document at TopN 20 with 60 s histories);
* one MBean attribute read from the Jolokia worker thread: through the LoopBridge hop to the
  event loop (how every getter read before; live attributes still do) against a direct read
  of the published read model (how window attributes read now). The ratio is the figure.

    nice -n 10 .venv/bin/python benchmarks/monitoring_read_model.py --rounds 2000
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections.abc import Callable, Iterable

from pushgrid.metrics.counters import Counters
from pushgrid.metrics.hotsubjects import HotSubjectSketches
from pushgrid.metrics.sampler import Sampler
from pushgrid.server.monitoring.loop_bridge import LoopBridge


class Tally:
    """50 active subjects a second, 200 subscribed ones."""

    def take_tally(self) -> dict[str, list[int]]:
        return {f"/s/{i}": [1, 2, 30] for i in range(50)}

    def subscriber_counts(self) -> Iterable[tuple[str, int]]:
        return iter([(f"/s/{i}", i) for i in range(200)])


def per_call(function: Callable[[], object], rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        function()
    return (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2000)
    rounds = parser.parse_args().rounds
    counters, now = Counters(), [1_800_000_000.5]
    sampler = Sampler(counters, clock=lambda: now[0])
    hot = HotSubjectSketches(Tally(), top_n=20, capacity=1000)
    sampler.listeners.append(hot.fold_seconds)
    sampler.attach_hot(hot)

    def tick() -> None:
        now[0] += 1
        counters.messages_in_total += int(now[0]) % 97
        sampler.sample()

    for _ in range(4000):  # more than an hour: every window level holds buckets
        tick()
    build = per_call(sampler._read_model, rounds)
    hot_only = per_call(hot.document, rounds)

    loop, bridge, ready = asyncio.new_event_loop(), LoopBridge(), threading.Event()

    def run() -> None:
        bridge.bind(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    ready.wait()

    def read() -> object:
        return sampler.read_model.window("incoming_messages_per_second", "1m").max

    hop = per_call(bridge.wrap(read), rounds)
    direct = per_call(read, rounds)
    loop.call_soon_threadsafe(loop.stop)
    print(
        f"read model per second: {build * 1e3:.3f} ms (of which hot document "
        f"{hot_only * 1e3:.3f} ms)"
    )
    print(
        f"attribute read: LoopBridge hop {hop * 1e6:.1f} us, read model {direct * 1e6:.2f} us, "
        f"ratio {hop / direct:.0f}x"
    )


if __name__ == "__main__":
    main()
