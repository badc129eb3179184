"""Pytest plugin (pyproject addopts `-p spark_timeouts`): the ONE Spark session of a test run,
and its timeouts (a Spark test is cut only by a hang).

The ``spark`` fixture lives here, not in a conftest.py, so that tests/unit and tests/integration
share one session: a second session would start in the JVM the first one launched anyway
(py4j keeps its gateway after ``stop()``), so its JVM options would be silently lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# A pytest-timeout firing inside a py4j call leaves the one gateway of this process with an
# unread answer, and every later Spark test then reads the wrong reply ("SparkConf does not exist
# in the JVM"). Tests on the shared Spark session get a bound only a real hang reaches.
SPARK_TIMEOUT_S = 900

# The runtime settings of the session as the fixture built it: code under test (the stats CLI
# reusing the running session) may change them; they are put back after each module.
_runtime_conf: dict[str, str] = {}
_session: list[Any] = []


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """ONE local SparkSession for the whole test run (start-up costs 6-15 s).

    ``local[2]``, 2 shuffle partitions, UI off, driver on 127.0.0.1, UTC (docs: REFERENCE.md).
    The JVM only uses its quick JIT tier and the serial GC: test jobs are many and tiny, and
    this halves the JVM's CPU time (measured: 39 s -> 22 s for the first pipeline run).
    """
    pytest.importorskip("pyspark")
    from pushgrid.spark_stats.spark_session import build_spark_session

    session = build_spark_session(
        "local[2]",
        "pushgrid-tests",
        shuffle_partitions=2,
        java_options="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    )
    _runtime_conf.update(
        {key: str(session.conf.get(key)) for key in ("spark.sql.shuffle.partitions",)}
    )
    _session.append(session)
    yield session
    _session.clear()
    session.stop()


@pytest.fixture(autouse=True, scope="module")
def _spark_settings_restored() -> Iterator[None]:
    yield
    for session in _session:
        for key, value in _runtime_conf.items():
            session.conf.set(key, value)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(SPARK_TIMEOUT_S), append=False)
