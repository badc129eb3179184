"""benchmarks/send_floor.py (issue 12's kernel floor) on a small scale: every socket gets every
flush, the reader drains without short writes, and the figures add up."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import send_floor


def test_a_small_floor_run_writes_every_flush_to_every_socket() -> None:
    result = send_floor.measure(
        sockets=20, flushes=50, frame_bytes=300, seconds=0.5, cpu=None, reader_cpu=None
    )
    assert result["sockets"] == 20
    assert result["short_writes"] == 0
    flushes = round(result["flushes_per_s"] * 0.5)
    assert 10 <= flushes <= 30  # paced, not a busy loop
    assert abs(result["sends_per_s"] - result["flushes_per_s"] * 20) <= 2  # both rounded
    parts = result["sender_user_util"] + result["sender_sys_util"]
    assert abs(result["sender_cpu_util"] - parts) <= 0.002
    assert result["flush_ms_p50"] <= result["flush_ms_p99"] <= result["flush_ms_max"]
    assert "sender_core_busy" not in result  # not pinned: no core to read


def test_bad_arguments_are_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        send_floor.main(["--sockets", "0"])
    assert stop.value.code == 2
    assert "--sockets" in capsys.readouterr().err
