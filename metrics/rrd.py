"""RRD charting of the seven indicators with the real ``rrdtool`` (Debian package ``rrdtool``).

One RRD file per member, step 1 s, one data source per indicator: ``GAUGE`` for connected users,
``DERIVE`` with min 0 for the cumulative totals, so a member restart (totals back to 0) gives an
unknown second instead of a huge negative or wrapped spike. The RRAs keep AVERAGE and MAX from
1 s (one hour) to 1 day (15 months), enough for day, week, month and year graphs.

Everything here builds ``rrdtool`` arguments or parses ``/stats``; :class:`RrdTool` runs them
(``rrdtool -``, one long-lived process fed a command per line, so a second of updates for many
members costs no process start).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pushgrid.protocol.exceptions import MonitoringError

from .indicators import INDICATORS, Indicator

STEP = 1  # seconds between updates
HEARTBEAT = 5  # an update missing for longer makes the seconds in between unknown

# indicator -> data source name (rrdtool allows at most 19 characters)
DS_NAMES: dict[str, str] = {
    "connected_users": "users",
    "connections_per_second": "connections",
    "disconnections_per_second": "disconnections",
    "incoming_messages_per_second": "msgs_in",
    "outgoing_messages_per_second": "msgs_out",
    "incoming_bytes_per_second": "bytes_in",
    "outgoing_bytes_per_second": "bytes_out",
}

# (steps per row, rows) as rrdtool durations: resolution:span
ARCHIVES: tuple[tuple[str, str], ...] = (
    ("1s", "1h"),
    ("1m", "2d"),
    ("5m", "2w"),
    ("1h", "62d"),
    ("1d", "15M"),
)
PERIODS: dict[str, str] = {"day": "-1d", "week": "-1w", "month": "-1mon", "year": "-1y"}


class RrdError(MonitoringError):
    """rrdtool is missing or refused a command (the message is rrdtool's)."""

    code = "rrd"


@dataclass(frozen=True)
class DataSource:
    name: str
    kind: str  # GAUGE or DERIVE
    stats_key: str  # the /stats line it is fed from
    indicator: Indicator

    def definition(self) -> str:
        return f"DS:{self.name}:{self.kind}:{HEARTBEAT}:0:U"


def data_sources() -> tuple[DataSource, ...]:
    """The seven indicators as data sources: rates from their cumulative counter (DERIVE)."""
    return tuple(
        DataSource(DS_NAMES[ind.name], "DERIVE" if ind.rate else "GAUGE", ind.counter, ind)
        for ind in INDICATORS
    )


def create_args(path: Path, start: int) -> list[str]:
    rras = [f"RRA:{cf}:0.5:{res}:{span}" for res, span in ARCHIVES for cf in ("AVERAGE", "MAX")]
    return [
        "create",
        str(path),
        "--step",
        str(STEP),
        "--start",
        str(start),
        *(ds.definition() for ds in data_sources()),
        *rras,
    ]


def parse_stats(text: str) -> dict[str, float]:
    """``name value`` lines of ``/stats`` -> numbers (comments and ``U`` values skipped)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(" ")
        if not name or name.startswith("#") or value in ("", "U"):
            continue
        try:
            values[name] = float(value)
        except ValueError:
            continue
    return values


def update_args(path: Path, ts: int, stats: Mapping[str, float]) -> list[str]:
    """One update; a value /stats did not have is ``U`` (unknown)."""
    fields = []
    for ds in data_sources():
        value = stats.get(ds.stats_key)
        fields.append("U" if value is None else _number(value))
    return ["update", str(path), f"{ts}:{':'.join(fields)}"]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# --- graphs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chart:
    name: str
    title: str
    unit: str
    lines: tuple[tuple[str, str, str], ...]  # (data source, colour, legend)


CHARTS: tuple[Chart, ...] = (
    Chart("users", "connected users", "sessions", (("users", "1f77b4", "connected users"),)),
    Chart(
        "connections",
        "connections and disconnections",
        "per second",
        (("connections", "2ca02c", "connections/s"), ("disconnections", "d62728", "disconn./s")),
    ),
    Chart(
        "messages",
        "messages",
        "messages/s",
        (("msgs_in", "9467bd", "incoming"), ("msgs_out", "ff7f0e", "outgoing")),
    ),
    Chart(
        "bytes",
        "bandwidth",
        "bytes/s",
        (("bytes_in", "8c564b", "incoming"), ("bytes_out", "17becf", "outgoing")),
    ),
)


def graph_args(
    rrd: Path, out: Path, chart: Chart, member: str, start: str, end: str = "now"
) -> list[str]:
    """``rrdtool graph`` of one chart: average line, shaded max, and a legend with numbers."""
    args = [
        "graph",
        str(out),
        "--start",
        start,
        "--end",
        end,
        "--title",
        f"pushgrid {member}: {chart.title}",
        "--vertical-label",
        chart.unit,
        "--width",
        "720",
        "--height",
        "200",
        "--lower-limit",
        "0",
        "--slope-mode",
        "--imgformat",
        "PNG",
    ]
    for ds, colour, legend in chart.lines:
        args += [
            f"DEF:{ds}={rrd}:{ds}:AVERAGE",
            f"DEF:{ds}_max={rrd}:{ds}:MAX",
            f"AREA:{ds}_max#{colour}33",
            f"LINE1:{ds}#{colour}:{legend:<16}",
            f"GPRINT:{ds}:LAST:now %8.1lf%s",
            f"GPRINT:{ds}:AVERAGE:avg %8.1lf%s",
            f"GPRINT:{ds}_max:MAX:max %8.1lf%s\\n",
        ]
    return args


# --- running rrdtool -----------------------------------------------------------------------------


def rrdtool_path() -> str:
    path = shutil.which("rrdtool")
    if path is None:
        raise RrdError("rrdtool not found on PATH: install the Debian package rrdtool")
    return path


def _quote(arg: str) -> str:
    """Quote an argument for ``rrdtool -`` (it splits lines on blanks, honouring quotes)."""
    if arg and not any(c in arg for c in " \t'\"\\"):
        return arg
    return "'" + arg.replace("\\", "\\\\").replace("'", "\\'") + "'"


class RrdTool:
    """A ``rrdtool -`` process: one command per line, answered ``OK ...`` or ``ERROR: ...``."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [rrdtool_path(), "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
        )

    def run(self, args: Sequence[str]) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(" ".join(_quote(a) for a in args) + "\n")
        self.proc.stdin.flush()
        output: list[str] = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RrdError(f"rrdtool exited: {' '.join(output) or 'no answer'}")
            if line.startswith("OK"):
                return
            if line.startswith("ERROR"):
                raise RrdError(line.removeprefix("ERROR:").strip())
            output.append(line.strip())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)

    def __enter__(self) -> RrdTool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_once(args: Iterable[str]) -> str:
    """Run one rrdtool command as its own process; its standard output."""
    done = subprocess.run(
        [rrdtool_path(), *args], capture_output=True, text=True, encoding="utf-8", check=False
    )
    if done.returncode != 0:
        raise RrdError((done.stderr or done.stdout).strip().removeprefix("ERROR:").strip())
    return done.stdout
