"""The hot path cost of hot-subject counting: ``fanout.py`` against two pushgrid servers.

    .venv/bin/python benchmarks/hot_subjects_cost.py --base c867cef --duration 5 --repeat 3

``--base REV`` is a revision without the counting (the commit before issue 17); its tree is
extracted with ``git archive`` into a temporary directory and run with this virtualenv's Python
(``PYTHONPATH`` puts it before the editable install). Both servers run at once, each pinned to
CPU 0 like ``fanout.py`` does; the runs alternate (base, current, base, ...) so that the noise of
a shared machine falls on both alike. Each run is ``fanout.py --target none`` (saturation, one
subject); the results are the ratios, per round and their median, of delivered messages/s
(current / base) and of the server's CPU time per delivered message (base / current; it is
less sensitive to CPU taken by other processes). Below 1: the current tree costs more.
Extra arguments after ``--`` go to ``fanout.py``.
"""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _extract(revision: str, target: Path) -> None:
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(target, filter="data")


def _start(tree: Path, port: int, workdir: Path) -> subprocess.Popen[bytes]:
    conf = workdir / f"pushgrid-{port}.conf"
    conf.write_text(
        f"Listen = 127.0.0.1:{port}\nMaxOutboundBufferSize = 67108864\n"
        "MonitorHTTP.Listen =\nMetricsArchive =\nWorkers = 1\nMetaSubjectInterval = 0\n"
    )
    command = [str(PYTHON), "-m", "pushgrid", "server", "--config", str(conf)]
    if shutil.which("taskset"):
        command = ["taskset", "-c", "0", *command]
    log = open(workdir / f"server-{port}.log", "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        command,
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"server on :{port} did not start: see {workdir}")


def _run(port: int, pid: int, duration: str, extra: list[str], out: Path) -> tuple[float, float]:
    """(delivered messages/s, server CPU microseconds per delivered message)."""
    out.unlink(missing_ok=True)
    subprocess.run(
        [
            str(PYTHON),
            str(ROOT / "benchmarks" / "fanout.py"),
            "--target",
            "none",
            "--server",
            f"127.0.0.1:{port}",
            "--server-pid",
            str(pid),
            "--duration",
            duration,
            "--warmup",
            "1",
            *extra,
            "--json-out",
            str(out),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    result = next(line for line in lines if "delivered_per_s" in line)
    delivered = float(result["delivered_per_s"]) * float(result["duration_s"])
    return float(result["delivered_per_s"]), 1e6 * float(result["server_cpu_s"]) / delivered


def main(argv: list[str]) -> None:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    options = dict(zip(argv[::2], argv[1::2], strict=False))
    base, duration = options.get("--base", "HEAD~1"), options.get("--duration", "5")
    repeat = int(options.get("--repeat", "3"))
    with tempfile.TemporaryDirectory(prefix="hot-cost-") as tmp:
        work = Path(tmp)
        _extract(base, work / "base")
        ports = {"base": _free_port(), "current": _free_port()}
        procs = {
            "base": _start(work / "base", ports["base"], work),
            "current": _start(ROOT, ports["current"], work),
        }
        results: dict[str, list[float]] = {"base": [], "current": []}
        cpu: dict[str, list[float]] = {"base": [], "current": []}
        try:
            for round_ in range(repeat):
                order = ("base", "current") if round_ % 2 == 0 else ("current", "base")
                for kind in order:
                    rate, us = _run(ports[kind], procs[kind].pid, duration, extra, work / "r.jsonl")
                    results[kind].append(rate)
                    cpu[kind].append(us)
                    print(
                        f"round {round_ + 1} {kind}: {rate:,.0f} delivered msgs/s, "
                        f"{us:.3f} server CPU us per delivery",
                        flush=True,
                    )
        finally:
            for proc in procs.values():
                proc.kill()
    ratios = [c / b for c, b in zip(results["current"], results["base"], strict=True)]
    # CPU per delivery, base / current: the same direction as the throughput ratio (below 1 =
    # current costs more), and far less sensitive to CPU stolen by other processes.
    cpu_ratios = [b / c for c, b in zip(cpu["current"], cpu["base"], strict=True)]
    summary = {
        "base": base,
        "base_delivered_per_s": results["base"],
        "current_delivered_per_s": results["current"],
        "ratios": [round(r, 4) for r in ratios],
        "median_ratio": round(statistics.median(ratios), 4),
        "base_cpu_us_per_delivery": [round(v, 4) for v in cpu["base"]],
        "current_cpu_us_per_delivery": [round(v, 4) for v in cpu["current"]],
        "cpu_ratios": [round(r, 4) for r in cpu_ratios],
        "median_cpu_ratio": round(statistics.median(cpu_ratios), 4),
        "extra_fanout_args": extra,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main(sys.argv[1:])
