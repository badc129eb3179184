"""CPU cost of the snapshot bounds per retained publish, now vs. a base revision (ADR 024).

    .venv/bin/python benchmarks/snapshot_bounds_cost.py --base 49f08a5 --fields 10 200

The base revision (``git archive``, run from a temporary directory on ``PYTHONPATH``) checks the
bounds by reading the snapshot back before the write (``PublishGuard.snapshot_bounds``, then
``engine.publish``); the current tree checks them inside the memory engine's merge. Each run
publishes ``--messages`` retained messages of 2 fields into a subject whose snapshot holds
``--fields`` fields; time per publish (``time.process_time``, best of ``--repeat``), base and
current run one after the other in their own processes. Prints one JSON line per field count.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


async def _per_publish(fields: int, messages: int, repeat: int) -> float:
    from pushgrid.server.engine.base import PublishRequest
    from pushgrid.server.engine.memory import MemoryEngine

    engine = MemoryEngine()  # the default limits: 1,000 cached per subject
    await engine.start(lambda message: None)
    publishing: Any = importlib.import_module("pushgrid.server.core.publishing")
    read_back = not hasattr(publishing, "Admission")  # before ADR 024
    guard = publishing.PublishGuard(publishing.PublishLimits(), engine) if read_back else None
    snapshot = {f"field{i}": "v" * 8 for i in range(fields)}
    await engine.publish(PublishRequest("/bench", "c", snapshot))
    update = {"field1": "12.5", "field2": "13"}
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(messages):
            if guard is not None:
                await guard.snapshot_bounds("/bench", "c", update, True)
            await engine.publish(PublishRequest("/bench", "c", update))
        best = min(best, time.process_time() - start)
    return best / messages


def _run(tree: Path, fields: int, messages: int, repeat: int) -> float:
    code = (
        "import asyncio, sys; sys.path.insert(0, sys.argv[1]); import snapshot_bounds_cost as b;"
        "print(asyncio.run(b._per_publish(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))"
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [str(ROOT / "benchmarks"), str(fields), str(messages), str(repeat)]
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=tree,  # the tree's pushgrid/ first on the path
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="revision with the read-back check")
    parser.add_argument("--fields", type=int, nargs="+", default=[10, 200])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", options.base], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        for fields in options.fields:
            then = _run(base, fields, options.messages, options.repeat)
            now = _run(ROOT, fields, options.messages, options.repeat)
            print(
                json.dumps(
                    {
                        "fields": fields,
                        "base_us_per_publish": round(then * 1e6, 2),
                        "current_us_per_publish": round(now * 1e6, 2),
                        "ratio": round(now / then, 2),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
