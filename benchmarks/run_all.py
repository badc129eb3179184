"""The whole fan-out sweep in one command: pushgrid against every peer, one table, JSON lines.

    nice -n 10 .venv/bin/python benchmarks/run_all.py            # or: make bench

Every round runs the targets back to back, interleaved (the order alternates between rounds),
each on a fresh server process pinned to one CPU (``taskset``), with the generator on the other:

1. saturation (``--inflight`` deliveries in flight per subscriber);
2. the issue's paced load, ``--rate`` publishes/s (350: 350k deliveries/s to 1,000 subscribers),
   with ``--probe`` latency-probe readers and pushgrid's own flush delay (its /metrics);
3. 50% and 80% of pushgrid's own saturation rate in that round (pushgrid targets only);
4. the connection storm / idle memory run: ``--storm`` subscribers connecting at once
   (``--storm-in-flight`` connects in flight), then one publish/s (server CPU per connection,
   connections/s, the storm's seconds, how busy server and generator were, KiB of RSS per idle
   connection).

Targets: ``pushgrid`` (default settings), ``pushgrid-tick0`` (``FlushTick = 0``: the write path
before ADR 012), ``pushgrid-tick10`` (``FlushTick = 10``: less CPU, more latency),
``pushgrid-pymalloc`` (``Allocator = pymalloc``: CPython's allocator, the default before ADR
033), ``pushgrid-base`` (another build's executable, ``--base OTHER/.venv/bin/pushgrid``: e.g. an
older commit),
``reference`` (``websockets``), ``picows`` (benchmarks/peers/picows_server.py), ``node``
(Node.js ``ws``, benchmarks/peers/node/: installed with npm on first use), ``nats`` (NATS over
WebSocket, ``GOMAXPROCS=1``).
The table shows the median over rounds; ``benchmarks/results/run_all-<date>.jsonl`` gets every run.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fanout
from fanout import BenchError, Params, ServerProcess, console, err

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = {  # label -> (server kind, extra pushgrid.conf lines)
    "pushgrid": ("pushgrid", {}),
    "pushgrid-tick0": ("pushgrid", {"FlushTick": "0"}),
    "pushgrid-tick10": ("pushgrid", {"FlushTick": "10"}),
    "pushgrid-pymalloc": ("pushgrid", {"Allocator": "pymalloc"}),  # before ADR 033's default
    "pushgrid-base": ("pushgrid", {}),  # another build: --base
    "reference": ("reference", {}),
    "picows": ("picows", {}),
    "node": ("node", {}),
    "nats": ("nats", {}),
}
#: environment variables of a target's server (allocator variants: jemalloc reads MALLOC_CONF)
TARGET_ENV: dict[str, dict[str, str]] = {
    # jemalloc without the options pushgrid/cli/allocator.py sets (an operator's MALLOC_CONF wins)
    "pushgrid-jemalloc-plain": {"MALLOC_CONF": ""},
    "pushgrid-jemalloc-bg": {"MALLOC_CONF": "background_thread:true"},
    "pushgrid-jemalloc-1arena": {"MALLOC_CONF": "narenas:1,tcache_max:16384"},
}
for _label in TARGET_ENV:
    TARGETS[_label] = ("pushgrid", {})
#: the executable of ``pushgrid-base`` (``--base``): e.g. an older commit's worktree
BASE: list[Path] = []
app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


def params(subscribers: int, rate: float, duration: float, inflight: float) -> Params:
    return Params(
        subscribers=subscribers,
        subjects=1,
        subscribe_mode="round-robin",
        message_size=100,
        rate=rate,
        duration=duration,
        warmup=2.0,
        procs=4,
        sample_every=fanout._auto_sample_every(
            rate, subscribers, 1, fanout.SubscribeMode.round_robin, 4
        ),
        read_interval_ms=1.0,
        max_unacked=1000,
        inflight=inflight,
        max_backlog=max(1, int(inflight * subscribers)),
        qos="guaranteed",
        retained=True,
        path="/ws",
        server_core=None,
        gen_cores=[],
        setup_timeout=120.0,
        drain_timeout=15.0,
        connect_concurrency=200,
    )


def run(label: str, p: Params, scenario: str, out: Path, workdir: Path) -> dict[str, Any]:
    kind, extra = TARGETS[label]
    port = fanout.free_port()
    load = Path("/proc/loadavg").read_text().split()[:3]
    console.print(f"[dim]{scenario}: {label} on :{port} (load {' '.join(load)})[/]")
    exe = BASE[0] if label == "pushgrid-base" else None
    env = TARGET_ENV.get(label)
    with ServerProcess(kind, port, p.server_core, workdir, extra, exe, env) as srv:
        pids = fanout.process_tree(srv.pid)
        res = fanout.run_once(
            p, "127.0.0.1", port, pids, label, srv.client, srv.publish_port, srv.metrics_url
        )
        res["server_command"] = " ".join(srv.command)
    res.update(scenario=scenario, loadavg=[float(x) for x in load], config=extra)
    res["machine"] = fanout.machine_info()
    with out.open("a") as f:
        f.write(json.dumps(res) + "\n")
    for warning in res["warnings"]:
        console.print(f"[yellow]warning[/] {label} {scenario}: {warning}")
    return res


def _setup_s(r: dict[str, Any]) -> float:
    return float(r["setup_s"])


def _server_waited(r: dict[str, Any]) -> float | None:
    """Share of the storm the server was runnable but held off its CPU by other processes."""
    wait = r.get("setup_server_wait_s")
    return None if wait is None else 100 * wait / r["setup_s"]


def median(results: list[dict[str, Any]], get: Any) -> float | None:
    values = [v for r in results if (v := get(r)) is not None]
    return statistics.median(values) if values else None


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def latency(results: list[dict[str, Any]]) -> str:
    if not results:
        return "-"
    p50 = median(results, lambda r: r["latency_us"]["p50"] / 1000)
    p99 = median(results, lambda r: r["latency_us"]["p99"] / 1000)
    top = median(results, lambda r: r["latency_us"]["max"] / 1000)
    kept = all(r["published_per_s"] >= 0.95 * r["rate"] for r in results)
    return f"{fmt(p50, '.1f')} / {fmt(p99, '.1f')} / {fmt(top, '.0f')}" + (
        "" if kept else " (behind)"
    )


def probe_latency(results: list[dict[str, Any]]) -> str:
    """The latency probe's readers (fanout.py --probe): little of the generator's backlog."""
    probed = [r for r in results if r.get("probe_latency_us")]
    if not probed:
        return "-"
    keys = ("p50", "p99", "max")
    parts = (median(probed, lambda r, k=k: r["probe_latency_us"][k] / 1000) for k in keys)
    return " / ".join(fmt(v, ".1f") for v in parts)


def flush_delay_p99(results: list[dict[str, Any]]) -> str:
    """pushgrid's own p99 wait before the write (upper bucket bound of its /metrics histogram)."""
    measured = [r for r in results if r.get("server_flush_delay_ms")]
    if not measured:
        return "-"
    p99 = median(measured, lambda r: r["server_flush_delay_ms"]["p99"])
    return "<=" + fmt(p99, "g")


def table(rows: dict[str, dict[str, list[dict[str, Any]]]], rate: float) -> Table:
    """Metrics as rows, targets as columns (medians over rounds)."""
    metrics: list[tuple[str, str, Any]] = [
        (
            "saturation: deliveries/s",
            "saturation",
            lambda rs: fmt(median(rs, lambda r: r["delivered_per_s"]), ",.0f"),
        ),
        (
            "saturation: µs CPU/delivery",
            "saturation",
            lambda rs: fmt(median(rs, lambda r: r["server_us_per_delivery"]), ".2f"),
        ),
        (f"{rate:g}/s: p50 / p99 / max ms", "paced", latency),
        (f"{rate:g}/s: probe p50 / p99 / max ms", "paced", probe_latency),
        (f"{rate:g}/s: server flush delay p99 ms", "paced", flush_delay_p99),
        (
            f"{rate:g}/s: server CPU",
            "paced",
            lambda rs: fmt(median(rs, lambda r: 100 * r["server_cpu_util"]), ".0f") + "%",
        ),
        (
            f"{rate:g}/s: µs CPU/delivery",
            "paced",
            lambda rs: fmt(median(rs, lambda r: r["server_us_per_delivery"]), ".2f"),
        ),
        (
            f"{rate:g}/s: write calls/delivery",
            "paced",
            lambda rs: fmt(median(rs, lambda r: r["server_writes_per_delivery"]), ".3f"),
        ),
        ("50% of sat.: p50 / p99 / max ms", "sat50", latency),
        ("80% of sat.: p50 / p99 / max ms", "sat80", latency),
        (
            "storm: KiB per idle connection",
            "storm",
            lambda rs: fmt(median(rs, lambda r: r["server_kb_per_connection"]), ".1f"),
        ),
        (
            "storm: ms CPU per connection",
            "storm",
            lambda rs: fmt(median(rs, lambda r: r["server_ms_per_connection"]), ".3f"),
        ),
        (
            "storm: connections/s",
            "storm",
            lambda rs: fmt(median(rs, lambda r: r["connections_per_s"]), ",.0f"),
        ),
        ("storm: seconds (all subscribed)", "storm", lambda rs: fmt(median(rs, _setup_s), ".1f")),
        (
            "storm: server / generator busy",
            "storm",
            lambda rs: (
                fmt(median(rs, lambda r: 100 * r["setup_server_cpu_util"]), ".0f")
                + "% / "
                + fmt(median(rs, lambda r: 100 * r["setup_gen_cpu_util"]), ".0f")
                + "%"
            ),
        ),
        (
            "storm: server waited for a CPU",
            "storm",
            lambda rs: fmt(median(rs, _server_waited), ".0f") + "%",
        ),
        (
            "storm: generator ms CPU/conn",
            "storm",
            lambda rs: fmt(median(rs, lambda r: r["setup_gen_ms_per_connection"]), ".3f"),
        ),
    ]
    t = Table(title="fan-out sweep: 1 subject, 100 B, medians over rounds", title_justify="left")
    t.add_column("metric")
    for label in rows:
        t.add_column(label, justify="right")
    for name, scenario, show in metrics:
        cells = [show(by[scenario]) if by.get(scenario) else "-" for by in rows.values()]
        t.add_row(name, *cells)
    return t


@app.command()
def main(
    targets: Annotated[str, typer.Option(help="comma-separated: " + ", ".join(TARGETS))] = ",".join(
        TARGETS
    ),
    rounds: Annotated[int, typer.Option(min=1)] = 1,
    subscribers: Annotated[int, typer.Option("--subscribers", "-n", min=1)] = 1000,
    rate: Annotated[float, typer.Option(help="the paced rate, publishes/s")] = 350.0,
    duration: Annotated[float, typer.Option(min=1)] = 8.0,
    inflight: Annotated[float, typer.Option(help="saturation window per subscriber")] = 20.0,
    storm: Annotated[
        int, typer.Option(help="subscribers of the storm/memory run (0 = skip); fd limit 20,000")
    ] = 19_900,
    storm_in_flight: Annotated[
        int,
        typer.Option(
            min=1,
            help="storm: connects in flight at once over all generator processes (each until "
            "its 101); above the server's listen backlog (asyncio's default: 100) the kernel "
            "drops handshakes (listen overflows) and they come back 1 s later",
        ),
    ] = 96,
    profile_dir: Annotated[
        Path | None, typer.Option(help="py-spy profile of every server in --profile-scenarios")
    ] = None,
    profile_scenarios: Annotated[
        str, typer.Option(help="the scenarios --profile-dir profiles: saturation,paced")
    ] = "paced",
    latency_probe: Annotated[
        int, typer.Option("--probe", min=0, help="latency probe readers in the paced runs")
    ] = 10,
    skip: Annotated[
        str, typer.Option(help="scenarios to skip: saturation,paced,sat50,sat80,storm")
    ] = "",
    base: Annotated[
        Path | None,
        typer.Option(help="target pushgrid-base runs this pushgrid executable (another build)"),
    ] = None,
    ports: Annotated[
        str,
        typer.Option(
            help="LO-HI: the servers' ports (client, monitoring, NATS) come from this range "
            "(default: any free port); on a shared machine each user keeps to its own"
        ),
    ] = "",
) -> None:
    """Run the sweep; print one table; append JSON lines to benchmarks/results/."""
    if ports:
        try:
            fanout.PORT_RANGE[:] = [fanout.parse_port_range(ports)]
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--ports") from None
    labels = [t.strip() for t in targets.split(",") if t.strip()]
    if "pushgrid-base" in labels:
        if base is None or not base.exists():
            raise typer.BadParameter("target pushgrid-base needs --base PATH/.venv/bin/pushgrid")
        BASE.append(base)
    unknown = [t for t in labels if t not in TARGETS]
    if unknown:
        raise typer.BadParameter(f"unknown targets {unknown}; known: {', '.join(TARGETS)}")
    skipped = {s.strip() for s in skip.split(",") if s.strip()}
    profiled = {s.strip() for s in profile_scenarios.split(",") if s.strip()}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"run_all-{time.strftime('%Y-%m-%d')}.jsonl"
    probe = params(subscribers, 0, duration, inflight)
    fanout.prepare_process(probe, "1", 0, True)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {label: {} for label in labels}

    def one(label: str, p: Params, scenario: str, workdir: Path) -> dict[str, Any] | None:
        """One run; a failed run (e.g. a peer that cannot serve the storm in time) is reported
        and recorded, and the sweep goes on."""
        p.server_core, p.gen_cores = probe.server_core, probe.gen_cores
        try:
            res = run(label, p, scenario, out, workdir)
        except BenchError as exc:
            err.print(f"[red]{scenario}: {label} failed:[/] {str(exc)[:300]}")
            with out.open("a") as f:
                failed = {"bench": "fanout-failed", "target": label, "scenario": scenario}
                f.write(json.dumps({**failed, "error": str(exc)[:2000]}) + "\n")
            failures.append(f"{scenario}: {label}")
            return None
        rows[label].setdefault(scenario, []).append(res)
        return res

    failures: list[str] = []

    try:
        with tempfile.TemporaryDirectory(prefix="pushgrid-bench-") as tmp:
            workdir = Path(tmp)
            for rnd in range(rounds):
                order = labels if rnd % 2 == 0 else labels[::-1]
                sat_rate: dict[str, float] = {}
                if "saturation" not in skipped:
                    for label in order:
                        p = params(subscribers, 0, duration, inflight)
                        if "saturation" in profiled:
                            p.profile_dir = profile_dir
                        res = one(label, p, "saturation", workdir)
                        if res is not None:
                            sat_rate[label] = res["published_per_s"]
                if "paced" not in skipped:
                    for label in order:
                        p = params(subscribers, rate, duration, inflight)
                        if "paced" in profiled:
                            p.profile_dir = profile_dir
                        p.probe = latency_probe
                        one(label, p, "paced", workdir)
                for share, scenario in ((0.5, "sat50"), (0.8, "sat80")):
                    if scenario in skipped or "pushgrid" not in sat_rate:
                        continue
                    paced = round(share * sat_rate["pushgrid"])  # pushgrid's own saturation
                    for label in [x for x in order if x.startswith("pushgrid")]:
                        one(
                            label, params(subscribers, paced, duration, inflight), scenario, workdir
                        )
                if storm and "storm" not in skipped:
                    for label in order:
                        p = params(storm, 1.0, 2.0, inflight)
                        p.warmup = 1.0
                        p.connect_concurrency = max(1, storm_in_flight // p.procs)
                        one(label, p, "storm", workdir)
    except BenchError as exc:
        err.print(f"[red]benchmark failed:[/] {exc}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("[red]interrupted[/]")
        raise typer.Exit(130) from None
    console.print(table(rows, rate))
    with contextlib.suppress(OSError):
        console.print(f"load average now: {Path('/proc/loadavg').read_text().split()[:3]}")
    console.print(f"JSON lines: {out}")
    if failures:
        err.print(f"[red]failed runs:[/] {', '.join(failures)}")


if __name__ == "__main__":
    app()
