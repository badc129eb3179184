"""Members are told apart in `ps` and `top` (issue 34 item 4.12): a local cluster's members run
the same command line (``python -m pushgrid.server server``) and differ only in their
environment, so each names itself in its process title and its comm."""

from __future__ import annotations

from pathlib import Path

import psutil

from .pgtest import ServerProcess, free_port


def test_a_member_names_itself_in_ps_and_top(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, {"ServerName": "m7"}, free_port()).start()
    try:
        assert server.proc is not None
        process = psutil.Process(server.proc.pid)
        title = " ".join(process.cmdline())
        assert title.startswith(f"pushgrid server m7 127.0.0.1:{server.port}"), title
        assert process.name() == "pushgrid m7", "top shows the comm: the name comes first"
    finally:
        server.kill()
