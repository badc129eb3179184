"""Every command of the README, verbatim, against a real ``make up`` and a real ``make cluster``
(issue 21 item 10), and ``pushgrid up`` restarting a member child killed with SIGKILL (item 4).

The README marks what a reader runs as fenced ``sh`` blocks: ```` ```sh ```` runs in both
modes, ```` ```sh make-up ```` with ``make up`` only, ```` ```sh make-cluster ```` with
``make cluster`` only (``text`` blocks are not commands: an install, a path of the reader's own).
Each block runs as one bash script (``-e``: the first failing command fails the test), from a
fresh directory holding only the clone's ``Makefile``, ``pyproject.toml`` and ``.venv``.

The README's ports are the defaults (8800, 8900, 8080, 9010, the cluster's 7100...), so each mode
runs in a network namespace of its own, with only a loopback: the commands run verbatim and no
port of the machine is taken. One deployment per mode, shared by its blocks.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from .netns import unavailable_reason
from .pgtest import REPO

BLOCK = re.compile(r"^```sh(?P<tag>[^\n]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
DEPLOY = {"make-up": "make up", "make-cluster": "make cluster"}
BLOCK_TIMEOUT = 120.0


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence in README.md
    tag: str  # "" (both modes), "make-up" or "make-cluster"
    body: str

    @property
    def deploys(self) -> bool:
        return any(line.strip().split("#")[0].strip() in DEPLOY.values() for line in self.lines)

    @property
    def lines(self) -> list[str]:
        return self.body.splitlines()


def readme_blocks(text: str) -> list[Block]:
    return [
        Block(text.count("\n", 0, m.start()) + 1, m["tag"].strip(), m["body"])
        for m in BLOCK.finditer(text)
    ]


BLOCKS = readme_blocks((REPO / "README.md").read_text(encoding="utf-8"))


def test_the_readme_marks_its_commands() -> None:
    """Both deployments and the blocks are found; a tag is one of the known ones."""
    assert {b.tag for b in BLOCKS} <= {"", *DEPLOY}
    assert [b.tag for b in BLOCKS if b.deploys] == ["make-up", "make-cluster"]
    assert sum(1 for b in BLOCKS if not b.deploys) >= 4


class Deployment:
    """``make up`` / ``make cluster`` in a namespace of its own, from a fresh directory."""

    def __init__(self, workdir: Path, mode: str) -> None:
        self.workdir = workdir
        self.mode = mode
        self.namespace = f"pgr-{os.getpid()}-{mode.removeprefix('make-')}"
        self.log = workdir / "deploy.log"
        self.proc: subprocess.Popen[bytes] | None = None
        for name in ("Makefile", "pyproject.toml", ".venv"):
            (workdir / name).symlink_to(REPO / name)

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.namespace]

    def start(self) -> Deployment:
        # `make up` here installs nothing: an out-of-date install stamp would make it run
        # `pip install -e .` from this directory and point the shared .venv at it
        stale = subprocess.run(["make", "-q", "-C", str(REPO), ".venv/.installed-runtime"])
        if stale.returncode != 0:
            pytest.fail("the runtime install of .venv is out of date: run `make install` first")
        subprocess.run(["ip", "netns", "add", self.namespace], check=True, timeout=10)
        subprocess.run([*self.prefix(), "ip", "link", "set", "lo", "up"], check=True, timeout=10)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*self.prefix(), "bash", "-c", DEPLOY[self.mode]],
                cwd=self.workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 120.0) -> None:
        """Every member's /health answers and the admin API printed its console line."""
        members = 3 if self.mode == "make-cluster" else 1
        urls = [f"http://127.0.0.1:{8900 + i}/health" for i in range(members)]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            assert self.proc.poll() is None, f"{self.mode} exited:\n{self.output()[-3000:]}"
            if "console:" in self.output() and all(self.curl_ok(url) for url in urls):
                return
            time.sleep(0.5)
        raise AssertionError(f"{self.mode} not ready in {timeout} s:\n{self.output()[-3000:]}")

    def curl_ok(self, url: str) -> bool:
        answer = subprocess.run(
            [*self.prefix(), "curl", "-sf", "-o", "/dev/null", url],
            capture_output=True,
            timeout=10,
            check=False,
        )
        return answer.returncode == 0

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def run(self, block: Block) -> tuple[int, str]:
        """Run a block as one bash script; (exit code, output). Jobs it left are ended."""
        script = "\n".join(
            line for line in block.lines if line.split("#")[0].strip() not in DEPLOY.values()
        )
        out_path = self.workdir / f"block-{block.line}.out"
        with out_path.open("wb") as out:
            proc = subprocess.Popen(
                [*self.prefix(), "bash", "-e", "-o", "pipefail", "-c", script],
                cwd=self.workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                code = proc.wait(BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                code = -1
            finally:
                _end_group(proc)
        return code, out_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """Ctrl-C, as a reader would; then whatever is left of every process it started (the
        stats run, a Spark JVM, lives in a session of its own, outside the group)."""
        if self.proc is not None:
            try:
                started = psutil.Process(self.proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                started = []
            _end_group(self.proc, signal.SIGINT, grace=20.0)
            for process in started:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
        subprocess.run(["ip", "netns", "del", self.namespace], check=False, timeout=10)


def _end_group(
    proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace: float = 5.0
) -> None:
    """``sig`` to the process group ``proc`` leads, then SIGKILL to what is left after
    ``grace`` seconds (``proc`` is reaped as it goes, so the group can empty)."""
    for signum in (sig, signal.SIGKILL):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _deployment(tmp: pytest.TempPathFactory, mode: str) -> Iterator[Deployment]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    deployment = Deployment(tmp.mktemp(mode), mode)
    try:
        yield deployment.start()
    finally:
        deployment.stop()


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    yield from _deployment(tmp_path_factory, "make-up")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    yield from _deployment(tmp_path_factory, "make-cluster")


def _blocks(mode: str) -> list[Block]:
    return [b for b in BLOCKS if b.tag in ("", mode) and not b.deploys]


@pytest.mark.timeout(2 * BLOCK_TIMEOUT + 60)  # each block twice
@pytest.mark.parametrize("block", _blocks("make-up"), ids=lambda b: f"README.md:{b.line}")
def test_readme_block_with_make_up(single: Deployment, block: Block) -> None:
    """Each block works verbatim twice in a row (issue 34: a reader runs the tour again, on
    the state the first run left: a snapshot, an RRD file, a watched pattern, a token)."""
    for run in ("first", "second"):
        code, output = single.run(block)
        assert code == 0, (
            f"README.md:{block.line} failed ({code}) with make up, {run} run:\n{output[-4000:]}"
        )


@pytest.mark.timeout(2 * BLOCK_TIMEOUT + 60)
@pytest.mark.parametrize("block", _blocks("make-cluster"), ids=lambda b: f"README.md:{b.line}")
def test_readme_block_with_make_cluster(cluster: Deployment, block: Block) -> None:
    for run in ("first", "second"):  # verbatim twice in a row, as with make up
        code, output = cluster.run(block)
        assert code == 0, (
            f"README.md:{block.line} failed ({code}) with make cluster, {run} run:\n"
            f"{output[-4000:]}"
        )


def test_make_up_prints_the_admin_token(single: Deployment) -> None:
    assert "first admin token (shown once): pgt_" in single.output()


def _member_child(deployment: Deployment, index: int) -> psutil.Process:
    """The ``pushgrid server`` child of ``pushgrid up`` that runs member ``index``."""
    assert deployment.proc is not None
    for child in psutil.Process(deployment.proc.pid).children(recursive=True):
        try:
            # a member sets its process title ("pushgrid server m2 ..."), which also overwrites
            # what /proc shows of its environment: the title's words name it
            words = " ".join(child.cmdline()).split()
            if "server" in words and f"m{index}" in words:
                return child
        except psutil.NoSuchProcess:
            continue
    raise AssertionError(f"no member m{index} child")


def test_make_cluster_says_a_killed_member_and_restarts_it(cluster: Deployment) -> None:
    victim = _member_child(cluster, 2)
    victim.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 60
    said = "pushgrid up: member m2 was killed by signal SIGKILL (9)"
    while time.monotonic() < deadline and said not in cluster.output():
        time.sleep(0.2)
    lines = [line for line in cluster.output().splitlines() if said in line]
    assert lines, f"no WARNING for the killed member:\n{cluster.output()[-3000:]}"
    assert "WARNING" in lines[0]
    assert "restarting it in 1 s (restart 1 of at most 5 within 300 s)" in lines[0]
    # the member comes back: a new process, its /health answering
    while time.monotonic() < deadline:
        try:
            if _member_child(cluster, 2).pid != victim.pid and cluster.curl_ok(
                "http://127.0.0.1:8901/health"
            ):
                return
        except AssertionError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"member m2 was not restarted:\n{cluster.output()[-3000:]}")


#: what uvicorn says at INFO (its own format, or ours with its logger's name)
UVICORN_INFO = re.compile(r"^INFO:|INFO uvicorn|Uvicorn running on|Started server process", re.M)


@pytest.mark.parametrize("mode", ["make-up", "make-cluster"])
def test_default_logging_is_quiet(mode: str, request: pytest.FixtureRequest) -> None:
    """Issue 21 item 4: at the default level no uvicorn INFO line (start-up steps, requests);
    our own start-up lines saying where everything listens are there."""
    deployment: Deployment = request.getfixturevalue("single" if mode == "make-up" else "cluster")
    # uvicorn says "Uvicorn running on" once it listens: wait until the admin API answers
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _answers(deployment, "http://127.0.0.1:8080/"):
        time.sleep(0.5)
    output = deployment.output()
    assert not UVICORN_INFO.search(output), output[-3000:]
    assert "pushgrid admin API on http://127.0.0.1:8080/api/v1" in output
    assert "console: http://127.0.0.1:8080/console/" in output
    assert "push server (WebSocket)  ws://127.0.0.1:8800/ws" in output


# Last in this module (tests run in file order): it stops the shared `make cluster`.
def test_ctrl_c_on_make_cluster_says_stopping(cluster: Deployment) -> None:
    """A Ctrl-C (SIGINT to the terminal's process group) stops everything and says so; no line
    says a child or a nats-server restarts, that a member lost NATS, or (from the admin API)
    that a member is down, while it stops."""
    assert cluster.proc is not None
    started = psutil.Process(cluster.proc.pid).children(recursive=True)
    logs = [cluster.log, *sorted((cluster.workdir / "data" / "logs").glob("member-*.log"))]
    before = {path: path.stat().st_size for path in logs}
    os.killpg(cluster.proc.pid, signal.SIGINT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        cluster.proc.poll() is None or any(_running(p) for p in started)
    ):
        time.sleep(0.2)
    alive = [p.pid for p in started if _running(p)]
    assert cluster.proc.poll() is not None, "pushgrid up still running 60 s after Ctrl-C"
    assert not alive, f"children still running after Ctrl-C: {alive}"
    said = {path.name: path.read_bytes()[before[path] :].decode(errors="replace") for path in logs}
    stopping = said[cluster.log.name]
    assert "pushgrid up: stopping the admin API, member m2, member m3" in stopping, stopping
    assert "pushgrid up: stopped" in stopping, stopping
    # the admin API is stopped first: it does not report the members it watches going away
    assert " is down" not in stopping, stopping
    for name, text in said.items():
        assert "restart" not in text.lower(), f"{name} while stopping:\n{text}"
        assert "lost the connection to NATS" not in text, f"{name} while stopping:\n{text}"


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _answers(deployment: Deployment, url: str) -> bool:
    """``url`` answers with any HTTP status (a 401 included)."""
    answer = subprocess.run(
        [*deployment.prefix(), "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return answer.stdout.strip() not in ("", "000")
