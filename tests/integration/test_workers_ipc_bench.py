"""benchmarks/workers_ipc.py (ADR 044's prototypes) on a small scale: every forwarded message
is decoded by every receiver, every connection is accepted by one listening process, every
passed descriptor reaches a worker."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workers_ipc


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(("destinations", "batch"), [(1, 1), (3, 16)])
def test_every_forward_reaches_every_destination(destinations: int, batch: int) -> None:
    # forward_cost asserts that the receivers decoded messages x destinations between them
    line = workers_ipc.forward_cost(destinations, 320, batch)
    assert line["destinations"] == destinations
    assert line["batch"] == batch
    assert line["forward_ns"] == pytest.approx(
        line["sender_ns_per_message_per_destination"] + line["receiver_ns_per_message"], abs=0.2
    )


def test_reuseport_listeners_share_every_connection() -> None:
    line = workers_ipc.reuseport_spread(free_port(), 2, 200)
    assert sum(line["accepted_per_process"]) == 200
    assert len(line["accepted_per_process"]) == 2
    assert line["max_over_even_share"] >= 1.0


def test_every_passed_descriptor_reaches_a_worker() -> None:
    line = workers_ipc.fd_passing(free_port(), 2, 100)
    assert line["passed_per_worker"] == [50, 50]
    assert line["acceptor_ns_per_connection"] > 0
    assert line["worker_ns_per_connection"] > 0
