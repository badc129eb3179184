"""CPU cost of what one message costs each transport, now vs. a base revision (no sockets).

    .venv/bin/python benchmarks/outframe_cost.py --base ecbb5d5

For one published message fanned out to ``--ws`` WebSocket and ``--sse`` event-stream
subscribers, times (per message, ``time.process_time``, best of ``--repeat``, base and current
alternating):

- ``encode``: what the engine value costs once per message: JSON + WebSocket frame before ADR
  018 (``Published.update_frame``), JSON only now (``Published.update``; the WebSocket frame is
  built on first use, counted in ``ws``);
- ``ws``: what each WebSocket subscriber's connection takes from the value (the shared frame);
- ``sse``: one SSE event per event-stream subscriber (``SseEncoder.event``): before, the
  WebSocket header stripped and the head of the payload decoded; now payload + position.

The base revision's ``server/engine/base.py`` and ``server/transport/sse.py`` are read with
``git show`` and loaded next to the current modules, as ``hub_deliver_cost.py`` does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hub_deliver_cost import _load, _show  # noqa: E402

from pushgrid.server.core.outgoing import update_frame  # noqa: E402
from pushgrid.server.engine import base as current_engine  # noqa: E402
from pushgrid.server.transport import sse as current_sse  # noqa: E402


def load_base(revision: str) -> tuple[Any, Any]:
    engine = _load(
        "pushgrid.server.engine.base_rev",
        "pushgrid.server.engine",
        _show(revision, "server/engine/base.py"),
        "server/engine/base.py",
    )
    sse = _load(
        "pushgrid.server.transport.sse_rev",
        "pushgrid.server.transport",
        _show(revision, "server/transport/sse.py"),
        "server/transport/sse.py",
    )
    return engine, sse


def per_message(engine: Any, sse: Any, ws: int, streams: int, content: str) -> Callable[[], None]:
    """One message, as the hub and the connections handle it (a closure to time)."""
    encoders = [sse.SseEncoder(chunked=True) for _ in range(streams)]
    published_type = engine.Published
    seq = [0]
    new_api = not hasattr(published_type, "update_frame")
    # ADR 018 put the live update on the engine's value; since ADR 024 the hub frames it
    frame_of = getattr(published_type, "update", update_frame)

    def run() -> None:
        data = b""
        seq[0] += 1
        message = published_type("/bench/s", content, {}, True, "guaranteed", "e", seq[0], 0)
        if new_api:
            out = frame_of(message)  # JSON once
            for _ in range(ws):  # what each WebSocket connection's send takes (shared frame)
                data = out.ws_frame or out.ws()
            for encoder in encoders:
                encoder.event(out)
        else:
            frame = message.update_frame()  # JSON + frame once
            for _ in range(ws):  # what each WebSocket connection's send takes (shared frame)
                data = frame
            for encoder in encoders:
                encoder.event(frame)
        del data

    return run


def best(run: Callable[[], None], messages: int) -> float:
    start = time.process_time()
    for _ in range(messages):
        run()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--content", type=int, default=100, help="content bytes per message")
    options = parser.parse_args()
    base_engine, base_sse = load_base(options.base)
    content = "x" * options.content
    for ws, streams in ((1, 0), (1000, 0), (0, 1), (0, 100), (1000, 100)):
        results = {"base": float("inf"), "current": float("inf")}
        for _ in range(options.repeat):
            for name, engine, sse in (
                ("base", base_engine, base_sse),
                ("current", current_engine, current_sse),
            ):
                run = per_message(engine, sse, ws, streams, content)
                results[name] = min(results[name], best(run, options.messages))
        line = {
            "ws_subscribers": ws,
            "sse_subscribers": streams,
            "messages": options.messages,
            "base_us_per_message": round(results["base"] / options.messages * 1e6, 3),
            "current_us_per_message": round(results["current"] / options.messages * 1e6, 3),
            "ratio": round(results["current"] / results["base"], 4),
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
