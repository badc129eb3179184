"""Write synthetic metrics archives (docs/archive.md layout) for tests and benchmarks.

Only the file layout is produced here; what the samples *are* is up to the caller, and tests
compute their expected statistics from the arrays they generated, never from these files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from pushgrid.metrics.archive import node_dirname
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.window_spec import HOUR

__all__ = ["HEADER", "archive_path", "write_node_samples"]

HEADER = ",".join(("ts", "node", *INDICATOR_NAMES))


def archive_path(root: Path, node: str, hour_start: int, *, open_: bool = False) -> Path:
    moment = datetime.fromtimestamp(hour_start, UTC)
    name = f"samples-{moment:%H}.csv" + (".open" if open_ else "")
    return root / moment.strftime("%Y-%m-%d") / node_dirname(node) / name


def write_node_samples(
    root: Path,
    node: str,
    ts: np.ndarray,
    values: Mapping[str, np.ndarray],
    *,
    open_hours: Iterable[int] = (),
    append: bool = False,
) -> list[Path]:
    """Write one node's samples (``ts`` ascending) as hourly files; returns the paths written.

    Hours listed in ``open_hours`` (hour starts) are written as ``samples-HH.csv.open``. With
    ``append`` an existing file is appended to (no second header).
    """
    ts = np.asarray(ts, dtype=np.int64)
    if len(ts) == 0:
        return []
    if np.any(np.diff(ts) < 0):
        raise ValueError("ts must be ascending")
    opened = set(open_hours)
    columns = {name: np.asarray(values[name], dtype=np.int64) for name in INDICATOR_NAMES}
    hours = ts - ts % HOUR
    bounds = np.flatnonzero(np.diff(hours)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(ts)]])
    written: list[Path] = []
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        hour = int(hours[a])
        path = archive_path(root, node, hour, open_=hour in opened)
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.table(
            {
                "ts": pa.array(ts[a:b]),
                "node": pa.array([node] * (b - a), type=pa.string()),
                **{name: pa.array(columns[name][a:b]) for name in INDICATOR_NAMES},
            }
        )
        exists = append and path.exists() and path.stat().st_size > 0
        with path.open("ab" if exists else "wb") as handle:
            if not exists:
                handle.write((HEADER + "\n").encode())
            pacsv.write_csv(table, handle, write_options=options)
        written.append(path)
    return written
