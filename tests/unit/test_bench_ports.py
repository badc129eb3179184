"""The benchmark kit keeps its servers' ports inside ``run_all.py --ports LO-HI`` (a shared
machine gives each user of the kit its own range)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fanout


def test_a_range_is_two_inclusive_bounds() -> None:
    assert fanout.parse_port_range("26000-26999") == range(26000, 27000)
    for bad in ("26000", "b-a", "0-10", "27000-26000", "1-70000"):
        with pytest.raises(ValueError, match="LO-HI"):
            fanout.parse_port_range(bad)


def test_free_ports_come_from_the_range_and_skip_one_in_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        monkeypatch.setattr(fanout, "PORT_RANGE", [range(port, port + 2)])
        monkeypatch.setattr(fanout, "_port_cursor", [0])
        assert fanout.free_port() == port + 1  # ``port`` is held: the next one
        monkeypatch.setattr(fanout, "PORT_RANGE", [range(port, port + 1)])
        with pytest.raises(fanout.BenchError, match="no free port"):
            fanout.free_port()
