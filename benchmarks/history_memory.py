"""What the admin API's history store (ADR 026) costs: bytes per member-hour, and a query.

Fills a :class:`~admin_api.history.HistoryStore` with ``--members`` members x ``--hours`` of
per-second samples (every indicator present, more than the retention written so every ring has
wrapped) and reports the memory tracemalloc sees allocated by the store (arrays + objects),
per member-hour, against the arrays' own size; then the time of a 15-minute and a one-hour
``history()`` answer (what the console asks when it opens and per range change).

    nice -n 5 .venv/bin/python benchmarks/history_memory.py --members 10 --hours 1
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from pushgrid.admin_api.history import HistoryStore
from pushgrid.admin_api.services.history import history
from pushgrid.metrics.indicators import INDICATOR_NAMES

T0 = 1_800_000_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args()
    seconds = int(args.hours * 3600)
    names = [f"m{i}" for i in range(args.members)]
    sample = {name: float(index) * 1000.5 for index, name in enumerate(INDICATOR_NAMES)}
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    store = HistoryStore(seconds)
    for ts in range(T0, T0 + seconds + 600):  # ten minutes more: every ring has wrapped
        for name in names:
            store.put(name, ts, sample)
    after = tracemalloc.take_snapshot()
    allocated = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    tracemalloc.stop()
    member_hours = args.members * args.hours
    print(f"members={args.members} retention={seconds} s")
    print(f"arrays: {store.nbytes():,} B = {store.nbytes() / member_hours:,.0f} B/member-hour")
    print(f"traced: {allocated:,} B = {allocated / member_hours:,.0f} B/member-hour")
    for span in (900, 3600):
        start = time.perf_counter()
        answer = history(store, names, store.newest() - span + 1, None)
        took = time.perf_counter() - start
        points = len(answer.cluster.seconds) * (1 + len(answer.members))
        print(
            f"history() of {span} s x {args.members} members: {took * 1000:.0f} ms"
            f" ({points:,} seconds)"
        )


if __name__ == "__main__":
    main()
