"""Benchmark of the statistics pipeline (spark_stats): a full first run, then an incremental one.

Generates ``--days`` days (default 35) of per-second samples for ``--nodes`` nodes (default 3:
about 9 million rows in 2,520 hourly CSV files, the current hour open), then runs the whole
pipeline (compaction -> rollups -> windows + trend series) as the CLI would, each run in a fresh
process with its own SparkSession:

1. ``full``: first run on an empty warehouse;
2. ``incremental``: after one more hour of data (the open hour closed, the next one opened);
3. ``idle``: again with nothing new (only the windows are recomputed).

For each run it reports the end-to-end wall time (process start to exit, JVM start included),
the stage times and row counts, and the peak memory of the run (Python + JVM: the sum of
their resident set sizes sampled every 0.1 s from /proc, plus each process's own peak VmHWM).

    .venv/bin/python benchmarks/spark_windows.py                    # 35 days x 3 nodes
    .venv/bin/python benchmarks/spark_windows.py --days 3 --keep    # a quick one
    .venv/bin/python benchmarks/spark_windows.py --json-out /tmp/spark_windows.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from metrics.indicators import INDICATOR_NAMES  # noqa: E402
from metrics.windows import DAY, HOUR  # noqa: E402
from spark_stats.synthetic import archive_path, write_node_samples  # noqa: E402

#: The first run's "now": 2026-11-22 00:10:00 UTC (the 00:00 hour is open).
END = 1_795_305_600
FIRST_AS_OF = END + 600
SECOND_AS_OF = END + HOUR + 600


# -- data ----------------------------------------------------------------------------------------


def node_values(rng: np.random.Generator, n: int, users: int) -> dict[str, np.ndarray]:
    """Plausible per-second indicators, all integers (outgoing bytes near 1e10)."""
    walk = users + np.cumsum(rng.integers(-20, 21, n))
    incoming = rng.poisson(2000, n)
    outgoing = incoming * 50 + rng.integers(0, 1000, n)
    values = {
        "connected_users": np.maximum(walk, 0),
        "connections_per_second": rng.poisson(30, n),
        "disconnections_per_second": rng.poisson(30, n),
        "incoming_messages_per_second": incoming,
        "outgoing_messages_per_second": outgoing,
        "incoming_bytes_per_second": incoming * 200 + rng.integers(0, 10_000, n),
        "outgoing_bytes_per_second": 9_000_000_000 + outgoing * 10 + rng.integers(0, 10**6, n),
    }
    assert set(values) == set(INDICATOR_NAMES)
    return {k: v.astype(np.int64) for k, v in values.items()}


def write_span(archive: Path, nodes: int, start: int, end: int, open_hour: int | None) -> int:
    """Write samples ``start <= ts < end`` for every node (0.1 % of seconds missing)."""
    rows = 0
    for k in range(nodes):
        node = f"push-{k + 1}"
        rng = np.random.default_rng([k, start])
        for day_start in range(start, end, DAY):
            ts = np.arange(day_start, min(day_start + DAY, end), dtype=np.int64)
            ts = ts[rng.random(len(ts)) > 0.001]
            write_node_samples(
                archive,
                node,
                ts,
                node_values(rng, len(ts), 50_000 + 1000 * k),
                open_hours=() if open_hour is None else (open_hour,),
                append=True,
            )
            rows += len(ts)
    return rows


def generate(archive: Path, days: int, nodes: int) -> tuple[int, float]:
    started = time.monotonic()
    rows = write_span(archive, nodes, END - days * DAY, END, None)
    rows += write_span(archive, nodes, END, FIRST_AS_OF + 1, END)  # the open hour
    return rows, time.monotonic() - started


def add_hour(archive: Path, nodes: int) -> int:
    """One more hour: complete and close the open hour, open the next one."""
    rows = write_span(archive, nodes, FIRST_AS_OF + 1, END + HOUR, END)
    for k in range(nodes):
        path = archive_path(archive, f"push-{k + 1}", END, open_=True)
        path.rename(path.with_name(path.name.removesuffix(".open")))
    rows += write_span(archive, nodes, END + HOUR, SECOND_AS_OF + 1, END + HOUR)
    return rows


# -- measuring a run -----------------------------------------------------------------------------


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Measured:
    wall: float
    peak_rss_mb: float  # max over samples of RSS(Python) + RSS(JVM)
    peak_hwm_mb: dict[str, float]  # each process's own peak (VmHWM)
    child: dict[str, Any]


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def measure(cmd: list[str]) -> Measured:
    """Run ``cmd``; sample the memory of its Python process and of the Spark JVM it starts.

    Only these two processes count: the JVM forks helpers (``chmod`` through jspawnhelper)
    whose resident size before ``exec`` is the JVM's own, which would be counted twice.
    """
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak = 0
    hwm = {"python": 0, "jvm": 0}
    jvm: int | None = None
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, jvm
        while not done.is_set():
            if jvm is None:
                jvm = next(
                    (p for p in _tree(proc.pid) if b"org.apache.spark.deploy" in _cmdline(p)),
                    None,
                )
            total = 0
            for name, pid in (("python", proc.pid), ("jvm", jvm)):
                if pid is None:
                    continue
                total += _status_kb(pid, "VmRSS")
                hwm[name] = max(hwm[name], _status_kb(pid, "VmHWM"))
            peak = max(peak, total)
            done.wait(0.1)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, _ = proc.communicate()
    wall = time.monotonic() - started
    done.set()
    thread.join()
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}): {' '.join(cmd)}")
    result = json.loads(out.strip().splitlines()[-1])
    return Measured(wall, peak / 1024, {k: v / 1024 for k, v in hwm.items()}, result)


def child_run(args: argparse.Namespace) -> None:
    """One pipeline run in this process (what ``pushgrid stats run`` does, minus the SQL)."""
    from spark_stats.pipeline import run_pipeline
    from spark_stats.session import build_session

    t0 = time.monotonic()
    spark = build_session(
        args.master, driver_memory=args.driver_memory, java_options=args.java_options or None
    )
    t1 = time.monotonic()
    result = run_pipeline(spark, Path(args.archive), Path(args.warehouse), args.as_of)
    t2 = time.monotonic()
    spark.stop()
    print(
        json.dumps(
            {
                "session_s": round(t1 - t0, 2),
                "pipeline_s": round(t2 - t1, 2),
                "stages": [
                    {
                        "name": s.name,
                        "seconds": round(s.seconds, 2),
                        "input_rows": s.input_rows,
                        "output_rows": s.output_rows,
                    }
                    for s in result.stages
                ],
                "window_stats": len(result.window_stats),
                "trend_points": len(result.trend_points),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=35)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--workdir", default="/tmp/pushgrid-spark-bench")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default=None)
    parser.add_argument("--java-options", default="")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--json-out", default=None)
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="(internal) one pipeline run")
    run.add_argument("--archive", required=True)
    run.add_argument("--warehouse", required=True)
    run.add_argument("--as-of", type=int, required=True)
    args = parser.parse_args()
    if args.command == "run":
        child_run(args)
        return

    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    archive, warehouse = work / "archive", work / "warehouse"
    rows, gen_s = generate(archive, args.days, args.nodes)
    files = sum(1 for _ in archive.rglob("samples-*"))
    size_mb = sum(p.stat().st_size for p in archive.rglob("samples-*")) / 2**20
    print(f"generated {rows:,} samples in {files} files ({size_mb:,.0f} MiB) in {gen_s:.0f} s")

    def run_once(label: str, as_of: int) -> dict[str, Any]:
        cmd = [sys.executable, __file__, "--master", args.master]
        if args.driver_memory:
            cmd += ["--driver-memory", args.driver_memory]
        if args.java_options:
            cmd += [f"--java-options={args.java_options}"]
        cmd += ["run", "--archive", str(archive), "--warehouse", str(warehouse)]
        cmd += ["--as-of", str(as_of)]
        m = measure(cmd)
        stages = ", ".join(
            f"{s['name']} {s['seconds']:.1f} s ({s['input_rows']:,} in / {s['output_rows']:,} out)"
            for s in m.child["stages"]
        )
        hwm = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(m.peak_hwm_mb.items()))
        print(
            f"{label:12s} wall {m.wall:6.1f} s (JVM start {m.child['session_s']:.1f} s, "
            f"pipeline {m.child['pipeline_s']:.1f} s) | peak RSS {m.peak_rss_mb:,.0f} MiB "
            f"[per-process peak MiB: {hwm}]\n             {stages}"
        )
        return {
            "run": label,
            "as_of": as_of,
            "wall_s": round(m.wall, 2),
            "peak_rss_mib": round(m.peak_rss_mb),
            "peak_hwm_mib": {k: round(v) for k, v in m.peak_hwm_mb.items()},
            **m.child,
        }

    runs = [run_once("full", FIRST_AS_OF)]
    added = add_hour(archive, args.nodes)
    print(f"added {added:,} samples (one hour)")
    runs.append(run_once("incremental", SECOND_AS_OF))
    runs.append(run_once("idle", SECOND_AS_OF))
    report = {
        "benchmark": "spark_windows",
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_avg_at_end": os.getloadavg(),
        },
        "days": args.days,
        "nodes": args.nodes,
        "samples": rows,
        "files": files,
        "archive_mib": round(size_mb),
        "generate_s": round(gen_s, 1),
        "master": args.master,
        "java_options": args.java_options,
        "runs": runs,
    }
    if args.json_out:
        with open(args.json_out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(report) + "\n")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
