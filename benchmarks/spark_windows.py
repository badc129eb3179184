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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pushgrid.metrics.indicators import INDICATOR_NAMES  # noqa: E402
from pushgrid.metrics.window_spec import DAY, HOUR  # noqa: E402
from pushgrid.spark_stats.synthetic_archive import archive_path, write_node_samples  # noqa: E402

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


def _day_samples(
    rng: np.random.Generator, k: int, start: int, end: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    ts = np.arange(start, end, dtype=np.int64)
    ts = ts[rng.random(len(ts)) > 0.001]
    return ts, node_values(rng, len(ts), 50_000 + 1000 * k)


def write_span(
    archive: Path,
    nodes: int,
    start: int,
    end: int,
    open_hour: int | None,
    *,
    fresh: bool = False,
) -> int:
    """Write samples ``start <= ts < end`` for every node (0.1 % of seconds missing).

    Appends to existing files unless ``fresh`` (then each hour file is rewritten).
    """
    rows = 0
    for k in range(nodes):
        node = f"push-{k + 1}"
        rng = np.random.default_rng([k, start])
        for day_start in range(start, end, DAY):
            ts, values = _day_samples(rng, k, day_start, min(day_start + DAY, end))
            write_node_samples(
                archive,
                node,
                ts,
                values,
                open_hours=() if open_hour is None else (open_hour,),
                append=not fresh,
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


# -- the fleet profile: a cached, resumable archive ----------------------------------------------

#: The hour whose file of the last node "arrives late" (after the incremental run): 3 h before END.
LATE_HOUR = END - 3 * HOUR
THIRD_AS_OF = SECOND_AS_OF + 60


def _late_node(nodes: int) -> str:
    return f"push-{nodes}"


def _late_path(archive: Path, nodes: int) -> Path:
    return archive_path(archive, _late_node(nodes), LATE_HOUR)


def generate_cached(cache: Path, days: int, nodes: int) -> tuple[int, float]:
    """The closed days of the archive in ``cache``: generated once, resumable day by day.

    A day is written for every node, then marked done (``.generated/<date>``); an interrupted
    generation redoes only its unfinished day. The late node's file of :data:`LATE_HOUR` is left
    out (the "late" run adds it). Returns (rows in the cache, seconds spent generating now).
    """
    from rich.progress import MofNCompleteColumn, Progress, TimeRemainingColumn

    archive = cache / "archive"
    marks = cache / ".generated"
    marks.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    rows = 0
    with Progress(
        *Progress.get_default_columns()[:-1], MofNCompleteColumn(), TimeRemainingColumn()
    ) as bar:
        task = bar.add_task(f"archive {days} d x {nodes} nodes", total=days)
        for day_start in range(END - days * DAY, END, DAY):
            mark = marks / time.strftime("%Y-%m-%d", time.gmtime(day_start))
            if mark.exists():
                rows += int(mark.read_text())
                bar.advance(task)
                continue
            day_rows = write_span(archive, nodes, day_start, day_start + DAY, None, fresh=True)
            if day_start <= LATE_HOUR < day_start + DAY:
                late = _late_path(archive, nodes)
                day_rows -= _count_rows(late)
                late.unlink()
            mark.write_text(str(day_rows))
            rows += day_rows
            bar.advance(task)
    return rows, time.monotonic() - started


def _count_rows(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle) - 1


def reset_runtime_files(archive: Path, nodes: int) -> int:
    """Back to the cached state plus the open hour: drop what earlier runs added, reopen END."""
    for hour in (END, END + HOUR):
        for k in range(nodes):
            for open_ in (False, True):
                archive_path(archive, f"push-{k + 1}", hour, open_=open_).unlink(missing_ok=True)
    _late_path(archive, nodes).unlink(missing_ok=True)
    return write_span(archive, nodes, END, FIRST_AS_OF + 1, END)


def add_late_hour(archive: Path, nodes: int) -> int:
    """The late node's file of LATE_HOUR arrives (same samples the generator made for it)."""
    day_start = LATE_HOUR - LATE_HOUR % DAY
    k = nodes - 1
    rng = np.random.default_rng([k, day_start])
    ts, values = _day_samples(rng, k, day_start, day_start + DAY)
    keep = (ts >= LATE_HOUR) & (ts < LATE_HOUR + HOUR)
    write_node_samples(
        archive, _late_node(nodes), ts[keep], {n: v[keep] for n, v in values.items()}
    )
    return int(keep.sum())


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
    import logging

    from pushgrid.spark_stats.pipeline import run_pipeline
    from pushgrid.spark_stats.spark_session import build_spark_session

    # batch and chunk commits on stderr, with their times (progress of a long run)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    t0 = time.monotonic()
    spark = build_spark_session(
        args.master, driver_memory=args.driver_memory, java_options=args.java_options or None
    )
    t1 = time.monotonic()
    result = run_pipeline(
        spark,
        Path(args.archive),
        Path(args.warehouse),
        args.as_of,
        batch_bytes=args.batch_mib * 2**20,
    )
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


PROFILES: dict[str, dict[str, Any]] = {
    # 35 days x 3 nodes, generated afresh in --workdir and deleted afterwards
    "default": {"days": 35, "nodes": 3},
    # 1 year x 10 nodes (~315M rows), generated once into --cache-dir and kept
    "fleet": {"days": 365, "nodes": 10},
}
DEFAULT_CACHE = Path.home() / ".cache" / "pushgrid-bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="default")
    parser.add_argument("--days", type=int, default=None, help="override the profile's days")
    parser.add_argument("--nodes", type=int, default=None, help="override the profile's nodes")
    parser.add_argument("--workdir", default="/tmp/pushgrid-spark-bench")
    parser.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="fleet profile's cache")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="fleet: keep the warehouse of an interrupted full run (it resumes where it stopped)",
    )
    parser.add_argument("--generate-only", action="store_true", help="fleet: only the archive")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default=None)
    parser.add_argument("--java-options", default="")
    parser.add_argument(
        "--batch-mib", type=int, default=1024, help="compaction batch size (MiB of CSV)"
    )
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
    profile = PROFILES[args.profile]
    days = args.days or profile["days"]
    nodes = args.nodes or profile["nodes"]
    if args.profile == "fleet":
        fleet(args, days, nodes)
    else:
        default_profile(args, days, nodes)


def _machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_avg_at_end": os.getloadavg(),
    }


def _write_json(path: str | None, report: dict[str, Any]) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(report) + "\n")


def _archive_size(archive: Path) -> tuple[int, float]:
    files = sum(1 for _ in archive.rglob("samples-*"))
    size_mb = sum(p.stat().st_size for p in archive.rglob("samples-*")) / 2**20
    return files, size_mb


def _runner(
    args: argparse.Namespace, archive: Path, warehouse: Path
) -> Callable[[str, int], dict[str, Any]]:
    def run_once(label: str, as_of: int) -> dict[str, Any]:
        cmd = [
            sys.executable,
            __file__,
            "--master",
            args.master,
            "--batch-mib",
            str(args.batch_mib),
        ]
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
            f"[per-process peak MiB: {hwm}]\n             {stages}",
            flush=True,
        )
        return {
            "run": label,
            "as_of": as_of,
            "wall_s": round(m.wall, 2),
            "peak_rss_mib": round(m.peak_rss_mb),
            "peak_hwm_mib": {k: round(v) for k, v in m.peak_hwm_mb.items()},
            **m.child,
        }

    return run_once


def default_profile(args: argparse.Namespace, days: int, nodes: int) -> None:
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    archive, warehouse = work / "archive", work / "warehouse"
    rows, gen_s = generate(archive, days, nodes)
    files, size_mb = _archive_size(archive)
    print(f"generated {rows:,} samples in {files} files ({size_mb:,.0f} MiB) in {gen_s:.0f} s")
    run_once = _runner(args, archive, warehouse)
    runs = [run_once("full", FIRST_AS_OF)]
    added = add_hour(archive, nodes)
    print(f"added {added:,} samples (one hour)")
    runs.append(run_once("incremental", SECOND_AS_OF))
    runs.append(run_once("idle", SECOND_AS_OF))
    report = {
        "benchmark": "spark_windows",
        "profile": "default",
        "machine": _machine(),
        "days": days,
        "nodes": nodes,
        "samples": rows,
        "files": files,
        "archive_mib": round(size_mb),
        "generate_s": round(gen_s, 1),
        "master": args.master,
        "java_options": args.java_options,
        "runs": runs,
    }
    _write_json(args.json_out, report)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def fleet(args: argparse.Namespace, days: int, nodes: int) -> None:
    """The fleet profile: cached archive; full, incremental (+1 hour) and late-hour runs.

    Each run's figures are printed and appended to ``--json-out`` as soon as it ends, so an
    interrupted benchmark keeps what it measured.
    """
    cache = Path(args.cache_dir) / f"fleet-{days}d-{nodes}n"
    rows, gen_s = generate_cached(cache, days, nodes)
    archive, warehouse = cache / "archive", cache / "warehouse"
    print(f"archive: {rows:,} samples in the cache {cache} ({gen_s:.0f} s generating now)")
    if args.generate_only:
        return
    if not args.resume:
        shutil.rmtree(warehouse, ignore_errors=True)
    rows += reset_runtime_files(archive, nodes)
    files, size_mb = _archive_size(archive)
    print(f"archive: {files:,} files, {size_mb:,.0f} MiB", flush=True)
    base = {
        "benchmark": "spark_windows",
        "profile": "fleet",
        "days": days,
        "nodes": nodes,
        "samples": rows,
        "files": files,
        "archive_mib": round(size_mb),
        "master": args.master,
        "java_options": args.java_options,
        "resumed": args.resume,
    }
    run_once = _runner(args, archive, warehouse)
    full = run_once("full", FIRST_AS_OF)
    samples_bytes = _du(warehouse / "samples")
    full["parquet_bytes_per_node_day"] = round(samples_bytes / (days * nodes))
    print(
        f"samples Parquet: {samples_bytes / 2**20:,.0f} MiB = "
        f"{full['parquet_bytes_per_node_day'] / 2**20:.2f} MiB per node-day",
        flush=True,
    )
    _write_json(args.json_out, {**base, "machine": _machine(), "runs": [full]})
    added = add_hour(archive, nodes)
    print(f"added {added:,} samples (one hour)", flush=True)
    incremental = run_once("incremental", SECOND_AS_OF)
    _write_json(args.json_out, {**base, "machine": _machine(), "runs": [incremental]})
    late = add_late_hour(archive, nodes)
    print(f"added {late:,} samples (one late hour of {_late_node(nodes)})", flush=True)
    late_run = run_once("late-hour", THIRD_AS_OF)
    _write_json(args.json_out, {**base, "machine": _machine(), "runs": [late_run]})


if __name__ == "__main__":
    main()
