"""Suite-wide rules shared by tests/unit and tests/integration."""

from __future__ import annotations

import pytest

# A pytest-timeout firing inside a py4j call leaves the one gateway of this process with an
# unread answer, and every later Spark test then reads the wrong reply ("SparkConf does not exist
# in the JVM"). Tests on the shared Spark session get a bound only a real hang reaches.
SPARK_TIMEOUT_S = 900


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(SPARK_TIMEOUT_S), append=False)
