"""Pytest plugin (pyproject addopts ``-p suite_groups``): how the suite runs in parallel
(docs/testing.md). ``make test`` runs pytest-xdist workers with ``--dist loadgroup``, and this
hook puts every test in a group, so that a group runs on one worker, in file order:

- a module is one group (its module-scoped servers, clusters and Chromium start once);
- every module using the ``spark`` fixture is the group ``spark``: one JVM for the run, as
  without workers (tests/spark_timeouts.py says why a second session is not wanted);
- a test or module marked ``pytest.mark.xdist_group("name")`` by its author keeps that group:
  modules given one name run one after the other on one worker, never at the same time.

Groups start heaviest first (``spark``, then modules with a ``slow`` test, then the rest in
collection order), so the longest ones do not begin last and leave the other workers idle.
Without ``-n`` (plain ``pytest``) nothing changes.

Hypothesis runs without its per-example deadline (200 ms by default): a timing check that a
loaded machine fails, and the suite has none (speed lives in benchmarks/). Tests that set
``@settings(...)`` keep their own values for what they set.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("pushgrid-suite", deadline=None)
settings.load_profile("pushgrid-suite")

SPARK_GROUP = "spark"


def _module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _explicit_group(item: pytest.Item) -> str | None:
    for mark in item.iter_markers("xdist_group"):
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    return None


def group_of_each(items: list[pytest.Item]) -> list[str]:
    """The xdist group of each item (same order as ``items``)."""
    spark_modules = {_module_of(i) for i in items if "spark" in getattr(i, "fixturenames", ())}
    groups = []
    for item in items:
        module = _module_of(item)
        explicit = _explicit_group(item)
        if explicit is not None:
            groups.append(explicit)
        elif module in spark_modules:
            groups.append(SPARK_GROUP)
        else:
            groups.append(module)
    return groups


def _weight(group: str, items: list[pytest.Item]) -> int:
    if group == SPARK_GROUP:
        return 0
    if any(item.get_closest_marker("slow") is not None for item in items):
        return 1
    return 2


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist ``loadgroup``: mark each test's group, heaviest groups first (a stable sort:
    the tests of a group keep their order)."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    groups = group_of_each(items)
    members: dict[str, list[pytest.Item]] = {}
    for item, group in zip(items, groups, strict=True):
        members.setdefault(group, []).append(item)
        if _explicit_group(item) is None:
            item.add_marker(pytest.mark.xdist_group(group))
    order = sorted(members, key=lambda g: _weight(g, members[g]))  # stable: file order kept
    items[:] = [item for group in order for item in members[group]]
