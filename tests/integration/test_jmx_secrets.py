"""No JMX password on a command line (issue 22 item 5): a jmxquery read runs ``java @argfile``.

A real jmxquery JVM is started against a listener that accepts and never answers, so the JVM
stays alive while the test reads its command line the way ``ps`` does (``/proc/<pid>/cmdline``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
from collections.abc import Iterator

import psutil
import pytest

from pushgrid.kernel.jmxquery import JmxError, query

PASSWORD = "jmx-pw-on-no-command-line-0x5EC"

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="needs java (JDK 17)")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never says anything."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


async def test_jmxquery_jvm_has_no_password_on_its_command_line(silent_port: int) -> None:
    url = f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{silent_port}/jmxrmi"
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}  # other tests' processes
    reading = asyncio.create_task(
        query(url, ["pushgrid:type=Server"], "monitor", PASSWORD, seconds=60)
    )
    java: psutil.Process | None = None
    for _ in range(600):
        java = next(
            (c for c in me.children(recursive=True) if c.pid not in before and "java" in c.name()),
            None,
        )
        if java is not None:
            break
        await asyncio.sleep(0.05)
    assert java is not None, "the jmxquery JVM did not start"
    cmdline = "\0".join(java.cmdline())  # what ps reads: /proc/<pid>/cmdline
    argfiles = [a for a in cmdline.split("\0") if a.startswith("@")]
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError, JmxError):
        await reading
    assert not java.is_running() or java.status() == psutil.STATUS_ZOMBIE, "cancel ends the JVM"
    assert PASSWORD not in cmdline, cmdline
    assert "-p" not in cmdline.split("\0"), cmdline
    assert argfiles, f"the login went in an argument file: {cmdline!r}"
    left = await asyncio.to_thread(os.path.exists, argfiles[0][1:])
    assert not left, "the argument file is removed with the JVM"
