"""Per-second metrics archive: one CSV file per node and hour, read later by ``spark_stats``.

Layout and format are specified in docs/archive.md. In short::

    <MetricsArchive>/<YYYY-MM-DD>/<node>/samples-<HH>.csv.open   the current hour, being written
    <MetricsArchive>/<YYYY-MM-DD>/<node>/samples-<HH>.csv        a closed hour (renamed at rollover)

Each line is ``ts,node,<indicator>...`` after a header line; ``ts`` is the UTC second the
sample describes. A line is flushed as soon as it is written, so a crash loses at most the
sample being written; a torn last line is terminated on reopen and readers drop malformed lines.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TextIO

log = logging.getLogger(__name__)

OPEN_SUFFIX = ".open"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def node_dirname(node: str) -> str:
    """A node name made safe for a directory name."""
    return _UNSAFE.sub("_", node) or "node"


#: The two file families of a node's hour: the seven indicators (one line a second) and the
#: watched patterns (one line a second per pattern, ``ts,node,pattern,...``; ADR 030).
SAMPLES = "samples"
WATCHED = "watched"
#: the delivery latency family (ADR 048): per second and scope (``member``, ``leg:<leg>``,
#: ``pattern:<pattern>``) the latency buckets as text (``"31:120 32:7"``), their count and the
#: clients' loss counters: ``ts,node,scope,buckets,count,gaps,...``; seconds without data have
#: no line
DELIVERY = "delivery"


def hour_path(root: Path, node: str, ts: int, prefix: str = SAMPLES) -> Path:
    """The closed-file path of the hour holding second ``ts``."""
    moment = datetime.fromtimestamp(ts, UTC)
    return root / moment.strftime("%Y-%m-%d") / node_dirname(node) / f"{prefix}-{moment:%H}.csv"


class ArchiveWriter:
    """Appends the lines of each second; rolls over and applies retention at each new hour.

    ``keys`` are text columns between ``node`` and the values (``("pattern",)`` for the watched
    family, whose second has one line per pattern).
    """

    def __init__(
        self,
        root: Path,
        node: str,
        columns: Sequence[str],
        retention_days: int = 35,
        *,
        prefix: str = SAMPLES,
        keys: Sequence[str] = (),
    ) -> None:
        self.root = root
        self.node = node
        self.columns = tuple(columns)
        self.retention_days = retention_days
        self.prefix = prefix
        self.keys = tuple(keys)
        self._hour: int | None = None
        self._file: TextIO | None = None
        self._path: Path | None = None

    @property
    def header(self) -> list[str]:
        return ["ts", "node", *self.keys, *self.columns]

    def write(self, ts: int, values: Mapping[str, float]) -> None:
        self.write_lines(ts, [((), values)])

    def write_lines(
        self, ts: int, lines: Sequence[tuple[Sequence[str], Mapping[str, float]]]
    ) -> None:
        """The lines of second ``ts``, each ``(key values, indicator values)``, one flush."""
        hour = ts // 3600
        if hour != self._hour:
            self._roll(ts)
        assert self._file is not None
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for key, values in lines:
            writer.writerow(
                [ts, self.node, *key, *(_number(values.get(c, 0.0)) for c in self.columns)]
            )
        self._file.write(buffer.getvalue())
        self._file.flush()

    def close(self) -> None:
        """Close the current file, leaving it open-suffixed (its hour is not over)."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._hour = None

    def _roll(self, ts: int) -> None:
        self.close()
        self._close_finished_hours(ts)
        self._apply_retention(datetime.fromtimestamp(ts, UTC).date())
        closed = hour_path(self.root, self.node, ts, self.prefix)
        path = closed.with_name(closed.name + OPEN_SUFFIX)
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists() or path.stat().st_size == 0
        if not fresh:
            _terminate_torn_line(path)
        handle = path.open("a", encoding="utf-8", newline="")
        if fresh:
            handle.write(",".join(self.header) + "\n")
            handle.flush()
        self._file, self._path, self._hour = handle, path, ts // 3600

    def _close_finished_hours(self, ts: int) -> None:
        """Rename this node's open files of hours before ``ts`` to their closed names."""
        current = hour_path(self.root, self.node, ts, self.prefix)
        pattern = f"*/{node_dirname(self.node)}/{self.prefix}-*.csv{OPEN_SUFFIX}"
        for path in self.root.glob(pattern):
            closed = path.with_name(path.name.removesuffix(OPEN_SUFFIX))
            if closed == current:
                continue
            _terminate_torn_line(path)
            path.rename(closed)

    def _apply_retention(self, today: date) -> None:
        if self.retention_days <= 0 or not self.root.exists():
            return
        oldest = today - timedelta(days=self.retention_days)
        for day_dir in self.root.iterdir():
            try:
                day = date.fromisoformat(day_dir.name)
            except ValueError:
                continue
            if day < oldest and day_dir.is_dir():
                log.info("archive retention: removing %s", day_dir)
                shutil.rmtree(day_dir, ignore_errors=True)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _terminate_torn_line(path: Path) -> None:
    with path.open("rb+") as handle:
        handle.seek(0, 2)
        if handle.tell() == 0:
            return
        handle.seek(-1, 2)
        if handle.read(1) != b"\n":
            handle.write(b"\n")


def read_samples(path: Path) -> list[dict[str, str]]:
    """Read one archive file, dropping malformed lines (used by tests and tools)."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            return []
        return [dict(zip(header, row, strict=True)) for row in reader if len(row) == len(header)]
