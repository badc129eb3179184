"""CPU cost of ``Hub.deliver`` now vs. a base revision, in one process (no sockets).

    .venv/bin/python benchmarks/hub_deliver_cost.py --base c867cef

The base revision's ``server/core/hub.py`` and ``server/engine/base.py`` (the engine values the
hub fans out: ``Published`` framed for WebSocket before ADR 018, an ``OutFrame`` after) are read
with ``git show`` and loaded as modules next to the current ones, so both hubs run on the same
interpreter, each with the engine values of its own revision. Each hub gets ``fanout``
subscribers whose ``send`` appends to a list (cheaper than a real connection's ``send``, so
the hub's own share, and the relative cost of its counting, is over-stated) and delivers
pre-encoded messages round-robin over ``subjects`` subjects. Timings use
``time.process_time``, alternate base / current, and keep the best of ``--repeat`` rounds per
hub (the least disturbed by other processes). Output: ns per delivered message for both and
their ratio (current / base; above 1 = the current hub costs more).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pushgrid.metrics.counters import Counters  # noqa: E402
from pushgrid.server.core import hub as current_hub  # noqa: E402
from pushgrid.server.engine.memory import MemoryEngine  # noqa: E402


def _show(revision: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{revision}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _load(name: str, package: str, source: str, origin: str) -> ModuleType:
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[spec.name] = module
    exec(compile(source, origin, "exec"), module.__dict__)
    return module


def load_base(revision: str) -> ModuleType:
    """The base revision's hub, importing the base revision's engine values."""
    engine_path, hub_path = "server/engine/base.py", "server/core/hub.py"
    _load(
        "pushgrid.server.engine.base_base",
        "pushgrid.server.engine",
        _show(revision, engine_path),
        engine_path,
    )
    source = _show(revision, hub_path).replace(
        "from ..engine.base import", "from ..engine.base_base import"
    )
    return _load(
        "pushgrid.server.core.hub_base", "pushgrid.server.core", source, f"{revision}:{hub_path}"
    )


class Sub:
    """A subscriber key (the hub maps sessions to their send)."""


def build(module: ModuleType, fanout: int, subjects: int) -> tuple[Any, list[Any], list[Any]]:
    hub = module.Hub(MemoryEngine(), Counters())
    sink: list[Any] = []
    messages = []
    published_type = module.Published  # the hub's own revision of the engine values
    for index in range(subjects):
        subject = f"/bench/s{index}"
        hub._live[subject] = {Sub(): sink.append for _ in range(fanout)}
        message = published_type(subject, "x" * 100, {}, True, "guaranteed", "e", 1, 0)
        # encoded once, as the engine did before fan-out (``update_frame`` before ADR 018,
        # ``update`` after it); today's hub encodes in ``deliver`` itself, once per message
        encode_once = getattr(message, "update", None) or getattr(message, "update_frame", None)
        if encode_once is not None:
            encode_once()
        messages.append(message)
    return hub, messages, sink


def measure(hub: Any, messages: list[Any], sink: list[Any], rounds: int, per_take: int) -> float:
    """Deliver ``rounds`` x every message; the tally is taken every ``per_take`` rounds (the
    sampler takes it once a second: ``per_take`` = messages per subject per second)."""
    deliver = hub.deliver
    take = getattr(hub, "take_tally", None)
    start = time.process_time()
    for index in range(rounds):
        for message in messages:
            deliver(message)
        sink.clear()
        if take is not None and index % per_take == 0:
            take()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="c867cef")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--deliveries", type=int, default=2_000_000)
    parser.add_argument(
        "--per-take",
        type=int,
        action="append",
        help="messages per subject between two takes of the tally (default: 1 and 100)",
    )
    options = parser.parse_args()
    base = load_base(options.base)
    cases = [
        (fanout, subjects, per_take)
        for per_take in options.per_take or [1, 100]
        for fanout, subjects in ((1, 1000), (10, 100), (1000, 1))
    ]
    for fanout, subjects, per_take in cases:
        rounds = max(1, options.deliveries // (fanout * subjects))
        best = {"base": float("inf"), "current": float("inf")}
        for _ in range(options.repeat):
            for name, module in (("base", base), ("current", current_hub)):
                hub, messages, sink = build(module, fanout, subjects)
                best[name] = min(best[name], measure(hub, messages, sink, rounds, per_take))
        deliveries = rounds * fanout * subjects
        line = {
            "messages_per_subject_per_take": per_take,
            "fanout": fanout,
            "subjects": subjects,
            "deliveries": deliveries,
            "base_ns_per_delivery": round(best["base"] / deliveries * 1e9, 2),
            "current_ns_per_delivery": round(best["current"] / deliveries * 1e9, 2),
            "ratio": round(best["current"] / best["base"], 4),
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
