"""Where the bytes of an idle subscribed connection go: tracemalloc and object counts.

    .venv/bin/python benchmarks/conn_memory.py -n 2000

Runs a pushgrid server in this process (default settings, no monitoring, no archive) under
``tracemalloc``, connects ``-n`` subscribers from a ``benchmarks/wsload.py`` subscriber process
(one subscription each), and prints the Python heap growth per connection by allocation site
and the objects per connection by type. The kernel's socket buffers and uvloop's C structures
are not Python allocations: the RSS growth is printed next to the traced total.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import wsload

from pushgrid.config import load_settings
from pushgrid.server.app import PushServer


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _short(filename: str) -> str:
    """site-packages/h11/_util.py, server/transport/connection.py..."""
    marker = "site-packages/"
    if marker in filename:
        return filename.split(marker, 1)[1]
    root = str(Path(__file__).resolve().parent.parent) + "/"
    return filename.removeprefix(root)


def type_counts() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__qualname__ for o in gc.get_objects())


async def measure(n: int, port: int, top: int) -> None:
    overrides: dict[str, Any] = {
        "Listen": f"127.0.0.1:{port}",
        "MonitorHTTP.Listen": "",  # no monitoring port, no archive, no meta-subjects
        "MetricsArchive": "",
        "MetaSubjectInterval": 0,
    }
    settings = load_settings(**overrides)
    server = PushServer(settings)
    await server.start()
    subscribers = wsload.IdleSubscribers(port, n, "/mem/s", "127.0.0.2", connect_concurrency=100)
    await asyncio.sleep(0.2)
    gc.collect()
    before, types_before, rss_before = tracemalloc.take_snapshot(), type_counts(), rss_kib()
    ready = await subscribers.start()
    await asyncio.sleep(0.5)
    gc.collect()
    after, types_after, rss_after = tracemalloc.take_snapshot(), type_counts(), rss_kib()
    print(f"connected {ready['connected']}, subscribed {ready['subscribed']}")
    stats = after.compare_to(before, "lineno")
    traced = sum(s.size_diff for s in stats)
    print(
        f"RSS growth {(rss_after - rss_before) / n:.2f} KiB/connection; "
        f"traced Python heap growth {traced / n / 1024:.2f} KiB/connection\n"
    )
    print("| allocation site | bytes per connection | blocks per connection |")
    print("| --- | ---: | ---: |")
    for s in stats[:top]:
        frame = s.traceback[0]
        where = f"{_short(frame.filename)}:{frame.lineno}"
        print(f"| `{where}` | {s.size_diff / n:.0f} | {s.count_diff / n:.1f} |")
    print("\n| object type | per connection |")
    print("| --- | ---: |")
    diff = Counter({k: types_after[k] - types_before.get(k, 0) for k in types_after})
    for name, count in diff.most_common(top):
        if count / n >= 0.5:
            print(f"| `{name}` | {count / n:.1f} |")
    await subscribers.stop()
    await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--port", type=int, default=18777)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    tracemalloc.start(1)
    uvloop.run(measure(args.n, args.port, args.top))


if __name__ == "__main__":
    main()
