"""What the deflate byte counters (ADR 032) add to one delivery on a deflate connection.

``DeflateWebSocketConnection.framed`` adds two integer additions on the process's ``Deflate``
object per data frame. This times exactly those statements against the same function without
them, on the real ``Deflate`` and ``OutFrame`` classes. The machine is shared: each variant runs
in many short windows, alternating, and the best window of each is reported (the least
disturbed), then the difference.

    nice -n 5 .venv/bin/python benchmarks/deflate_counters_cost.py [--windows 400]
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable

from pushgrid.server.framing.deflate import DeflateOptions
from pushgrid.server.framing.outframe import OutFrame
from pushgrid.server.transport.context import Deflate
from pushgrid.server.transport.inflating import InflatingBudget


def variants() -> dict[str, Callable[[], bytes]]:
    deflate = Deflate(DeflateOptions(), 10, InflatingBudget(64 << 20, 8 << 20))
    frame = OutFrame(b"x" * 300)
    data = b"y" * 120  # the shared compressed frame, already built

    def without() -> bytes:
        return data

    def with_counters() -> bytes:
        shared = deflate
        shared.uncompressed_bytes += frame.ws_size()
        shared.compressed_bytes += len(data)
        return data

    return {"without": without, "with counters": with_counters}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=400)
    parser.add_argument("--calls", type=int, default=5000, help="calls per window")
    args = parser.parse_args()
    best: dict[str, float] = {}
    for _ in range(args.windows):
        for name, call in variants().items():
            seconds = timeit.timeit(call, number=args.calls)
            best[name] = min(best.get(name, float("inf")), seconds / args.calls * 1e9)
    for name, ns in best.items():
        print(f"{name:>14}: {ns:6.1f} ns per call (best window)")
    print(f"{'added':>14}: {best['with counters'] - best['without']:6.1f} ns per delivery")


if __name__ == "__main__":
    main()
