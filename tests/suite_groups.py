"""Pytest plugin (pyproject addopts ``-p suite_groups``): the order the suite's modules start in
when it runs in parallel (docs/testing.md).

``make test`` runs pytest-xdist workers with ``--dist loadfile --no-loadscope-reorder``: a module
is one unit of work and runs whole on one worker (its module-scoped servers, clusters and
Chromium start once), and units are handed out in collection order. This hook makes that order
longest first: the modules of ``MODULE_SECONDS`` (their own time in a recent run), longest
first; the other modules by kind (those using the ``spark`` fixture, a JVM each, then those
with a test marked ``slow``), then the rest in file order; the tests of a module keep their
order. So a long module does not begin last and leave the other workers idle at the end.

Without workers (plain ``pytest``) the order is the files' order, as before.

At the end the suite prints its modules' own time (setup, call and teardown of their tests,
summed: a module's time on its worker), the longest first: where the suite's minutes go, in
every run's output (CI's included), for whoever trims it next.

Hypothesis runs without its per-example deadline (200 ms by default): a timing check that a
loaded machine fails, and the suite has none (speed lives in benchmarks/). Tests that set
``@settings(...)`` keep their own values for what they set.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("pushgrid-suite", deadline=None)
settings.load_profile("pushgrid-suite")


def _module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


# The modules' own time (s) in the fresh-clone run of 2026-11-28 (9d6dcb0, 3 workers, quiet
# machine) for the modules above about a minute: what the run's last table ("the modules' own
# time") prints, and test_base_install / test_canaries at what other runs of the day took. A
# module missing here is placed by kind (``KIND_SECONDS``); update the figures from a run's table
# when a module's time changes by minutes (an order, not a check: a stale figure costs minutes at
# most).
MODULE_SECONDS: dict[str, float] = {
    "tests/unit/test_spark_pipeline.py": 457,
    "tests/integration/test_console_layout_browser.py": 310,
    "tests/integration/test_readme_commands.py": 297,
    "tests/integration/test_console_browser.py": 213,
    "tests/integration/test_stats_cluster.py": 183,
    "tests/integration/test_cluster_guaranteed.py": 145,
    "tests/integration/test_base_install.py": 100,
    "tests/integration/test_console_ops_browser.py": 99,
    "tests/integration/test_console_workers_browser.py": 89,
    "tests/integration/test_canaries.py": 78,
    "tests/integration/test_stats_cli.py": 78,
    "tests/integration/test_browser_recovery.py": 75,
    "tests/integration/test_stats_verify.py": 74,
    "tests/integration/test_admin_schemathesis.py": 73,
    "tests/integration/test_console_subjects_browser.py": 67,
    "tests/integration/test_partitions.py": 59,
    "tests/integration/test_wheel_install.py": 58,
    "tests/unit/test_spark_watched.py": 56,
    "tests/integration/test_console_clients_browser.py": 56,
}
# A module not in MODULE_SECONDS: one using the Spark session, one with a slow test, the others.
KIND_SECONDS = {"spark": 60.0, "slow": 50.0, "other": 0.0}


def _kind(items: list[pytest.Item]) -> str:
    if any("spark" in getattr(item, "fixturenames", ()) for item in items):
        return "spark"
    if any(item.get_closest_marker("slow") is not None for item in items):
        return "slow"
    return "other"


def longest_first(kinds: dict[str, str], seconds: dict[str, float]) -> list[str]:
    """The modules (in file order, with their kind) longest first by ``seconds``, else by
    ``KIND_SECONDS``; stable, so modules of equal estimate keep the files' order."""

    def estimate(module: str) -> float:
        return seconds.get(module, KIND_SECONDS[kinds[module]])

    return sorted(kinds, key=lambda module: -estimate(module))


def heaviest_first(
    items: list[pytest.Item], seconds: dict[str, float] = MODULE_SECONDS
) -> list[pytest.Item]:
    """``items`` by module, longest modules first (the tests of a module keep their order)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(_module_of(item), []).append(item)
    kinds = {module: _kind(tests) for module, tests in modules.items()}
    return [item for module in longest_first(kinds, seconds) for item in modules[module]]


_module_seconds: dict[str, float] = {}
MODULES_SHOWN = 30


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # on the controller too: xdist replays every worker's reports there
    module = report.nodeid.split("::", 1)[0]
    _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration


def module_table(seconds: dict[str, float], shown: int = MODULES_SHOWN) -> list[str]:
    """Lines of the modules' times, longest first, with the total and how many are left out."""
    order = sorted(seconds.items(), key=lambda item: -item[1])
    total = sum(seconds.values())
    lines = [f"{value:8.1f}s  {module}" for module, value in order[:shown]]
    rest = order[shown:]
    if rest:
        lines.append(f"{sum(v for _, v in rest):8.1f}s  ({len(rest)} more modules)")
    lines.append(f"{total:8.1f}s  in all (the sum over workers)")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if hasattr(terminalreporter.config, "workerinput") or not _module_seconds:
        return
    terminalreporter.write_sep("=", "the modules' own time, longest first")
    for line in module_table(_module_seconds):
        terminalreporter.write_line(line)


def _distributed(config: pytest.Config) -> bool:
    # the controller has --dist; xdist gives its workers dist "no" and a ``workerinput``
    return hasattr(config, "workerinput") or config.getoption("dist", "no") != "no"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _distributed(config):
        items[:] = heaviest_first(items)
