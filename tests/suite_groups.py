"""Pytest plugin (pyproject addopts ``-p suite_groups``): the order the suite's modules start in
when it runs in parallel (docs/testing.md).

``make test`` runs pytest-xdist workers with ``--dist loadfile --no-loadscope-reorder``: a module
is one unit of work and runs whole on one worker (its module-scoped servers, clusters and
Chromium start once), and units are handed out in collection order. This hook makes that order
heaviest first: the modules using the ``spark`` fixture (a JVM each), then those with a test
marked ``slow``, then the rest in file order; the tests of a module keep their order. So the
longest modules do not begin last and leave the other workers idle at the end.

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


def _weight(items: list[pytest.Item]) -> int:
    if any("spark" in getattr(item, "fixturenames", ()) for item in items):
        return 0
    if any(item.get_closest_marker("slow") is not None for item in items):
        return 1
    return 2


def heaviest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` by module, heaviest modules first (stable: file order otherwise)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(_module_of(item), []).append(item)
    order = sorted(modules.values(), key=_weight)
    return [item for module in order for item in module]


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
