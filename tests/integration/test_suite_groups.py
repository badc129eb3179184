"""The suite's own scheduling (tests/suite_groups.py, docs/testing.md), run by a real pytest with
real xdist workers on a small tree of tests, as ``make test`` runs it: a module stays whole on
one worker, the heaviest modules (``spark``, then ``slow``) are handed out first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]

RECORD = """
import os
from pathlib import Path

def record(name):
    (Path(os.environ["RECORD_DIR"]) / name).write_text(os.environ["PYTEST_XDIST_WORKER"])
"""

CONFTEST = f"""{RECORD}
import pytest

@pytest.fixture
def spark():
    return "a stand-in for the session"
"""

MODULES = {
    "test_a.py": "from conftest import record\n"
    "def test_a1(): record('a1')\ndef test_a2(): record('a2')\ndef test_a3(): record('a3')\n",
    "test_b.py": "from conftest import record\n"
    "def test_b1(spark): record('b1')\ndef test_b2(): record('b2')\n",
    "test_c.py": "import pytest\nfrom conftest import record\n"
    "@pytest.mark.slow\ndef test_c1(): record('c1')\ndef test_c2(): record('c2')\n",
    "test_d.py": "from conftest import record\ndef test_d1(): record('d1')\n",
    "test_e.py": "from conftest import record\ndef test_e1(): record('e1')\n",
    "test_f.py": "from conftest import record\ndef test_f1(spark): record('f1')\n",
}


def _pytest(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # only the plugins this needs: loading every installed one costs seconds of CPU per process
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR), "RECORD_DIR": str(tree / "out"),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # fmt: skip
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist.plugin", "-p", "suite_groups",
         "-p", "no:cacheprovider", "-q",
         "--dist", "loadfile", "--no-loadscope-reorder", *args, str(tree)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_groups_stay_on_one_worker_and_the_heaviest_go_first(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "out").mkdir()

    listed = _pytest(tmp_path, "--collect-only")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    order = [line.split("::")[1] for line in listed.stdout.splitlines() if "::" in line]
    # spark modules (b, f) first, then the module with a slow test (c), then file order
    assert order == ["test_b1", "test_b2", "test_f1", "test_c1", "test_c2", "test_a1",
                     "test_a2", "test_a3", "test_d1", "test_e1"]  # fmt: skip
    plain = _pytest(tmp_path, "--collect-only", "--dist", "no")
    assert [line.split("::")[1] for line in plain.stdout.splitlines() if "::" in line][:3] == [
        "test_a1", "test_a2", "test_a3"], "without workers the files' order is kept"  # fmt: skip

    ran = _pytest(tmp_path, "-n", "3")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    worker = {p.name: p.read_text() for p in (tmp_path / "out").iterdir()}
    assert len(worker) == 10
    assert worker["a1"] == worker["a2"] == worker["a3"]
    assert worker["b1"] == worker["b2"]
    assert worker["c1"] == worker["c2"]
    assert len(set(worker.values())) > 1, "the modules were spread over the workers"
    # the modules' own time, every module once (its tests' reports come from their workers)
    table = ran.stdout[ran.stdout.index("the modules' own time") :].splitlines()[1:]
    listed_modules = sorted(line.split()[1] for line in table if "test_" in line)
    assert listed_modules == sorted(MODULES), table
    assert any("in all (the sum over workers)" in line for line in table), table
