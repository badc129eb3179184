"""Cost of the delivery family (ADR 062) in one statistics pipeline run, against the indicator
family of the SAME run (a ratio, so the shared machine's load cancels out as far as it can).

Writes ``--hours`` hours (default 3) of per-second archives for ``--nodes`` nodes (default 2):
the seven indicators every second (the synthetic writer) and, every second, delivery lines of
three series (``member``, ``leg:engine``, ``pattern:/a/*``) with ``--buckets`` non-empty buckets
each (default 5; a real second holds a few), the current hour open; then runs the pipeline once
on an empty warehouse (compaction -> rollups -> windows, the full first run) and a second time
with nothing new (windows only), and prints each family's stage seconds and the ratio.

    .venv/bin/python benchmarks/spark_delivery.py
    .venv/bin/python benchmarks/spark_delivery.py --hours 6 --buckets 8
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pushgrid.metrics.archive import DELIVERY, ArchiveWriter  # noqa: E402
from pushgrid.metrics.indicators import INDICATOR_NAMES  # noqa: E402
from pushgrid.ops.delivery import bucket_text  # noqa: E402
from pushgrid.protocol.latency import BUCKET_COUNT  # noqa: E402
from pushgrid.spark_stats.delivery import DELIVERY_KEYS, DELIVERY_VALUES  # noqa: E402
from pushgrid.spark_stats.results import StageResult  # noqa: E402
from pushgrid.spark_stats.synthetic_archive import write_node_samples  # noqa: E402

SERIES = ("member", "leg:engine", "pattern:/a/*")


def write_archive(root: Path, start: int, end: int, nodes: int, buckets: int) -> None:
    rng = np.random.default_rng(62)
    ts = np.arange(start, end + 1, dtype=np.int64)
    open_hour = end - end % 3600
    for n in range(nodes):
        node = f"bench-{n}"
        values = {name: rng.integers(0, 10_000, len(ts)) for name in INDICATOR_NAMES}
        write_node_samples(root, node, ts, values, open_hours=[open_hour])
        writer = ArchiveWriter(root, node, DELIVERY_VALUES, prefix=DELIVERY, keys=DELIVERY_KEYS)
        for second in ts.tolist():
            lines = []
            for j, series in enumerate(SERIES):
                counts = [0] * BUCKET_COUNT
                first = 25 + (second + j) % 20
                for b in range(buckets):
                    counts[min(BUCKET_COUNT - 1, first + b)] = 1 + (second * (b + 1)) % 7
                lines.append(((series, bucket_text(counts)), {"count": float(sum(counts))}))
            writer.write_lines(second, lines)
        writer.close()


def family_seconds(stages: Sequence[StageResult]) -> dict[str, float]:
    out: dict[str, float] = {}
    for stage in stages:
        family = "delivery" if stage.name.startswith("delivery_") else "indicators"
        if stage.name.startswith("watched_"):
            family = "watched"
        out[family] = out.get(family, 0.0) + stage.seconds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--buckets", type=int, default=5)
    args = parser.parse_args()

    from pushgrid.spark_stats.pipeline import run_pipeline
    from pushgrid.spark_stats.spark_session import build_spark_session

    work = Path(tempfile.mkdtemp(prefix="spark-delivery-"))
    end = (int(time.time()) // 3600 - 1) * 3600 + 1800  # half an hour into the previous hour
    start = end - args.hours * 3600 + 1
    write_archive(work / "archive", start, end, args.nodes, args.buckets)
    print(f"machine: {platform.node()} {os.cpu_count()} cores, load {os.getloadavg()}")
    print(
        f"archive: {args.hours} h x {args.nodes} nodes, {len(SERIES)} series x "
        f"{args.buckets} buckets a second"
    )
    spark = build_spark_session(master="local[2]")
    try:
        for run in ("first", "idle"):
            result = run_pipeline(spark, work / "archive", work / "warehouse", end)
            seconds = family_seconds(result.stages)
            ratio = seconds["delivery"] / seconds["indicators"]
            rows = 0 if result.delivery_stats is None else len(result.delivery_stats)
            print(
                f"{run:5s} run: indicators {seconds['indicators']:.1f} s, delivery "
                f"{seconds['delivery']:.1f} s (ratio {ratio:.2f}), {rows} delivery window rows"
            )
            for stage in result.stages:
                print(
                    f"    {stage.name:22s} {stage.seconds:6.1f} s  in {stage.input_rows:>9} "
                    f"out {stage.output_rows:>8}"
                )
        print(f"load after: {os.getloadavg()}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
