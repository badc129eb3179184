"""The live charts' y axes as Chromium draws them: never a tick below one unit, and byte axes
in the KiB/MiB the values read in (``console.format.number``), never plotly's kB/MB.

An all-zero byte chart used to read ``0B, 500mB, 1B`` (plotly's SI format on a 0..1 axis).
Each figure of :func:`console.figures.live_figure` is rendered by the real plotly.js in headless
Chromium, and its tick labels are read back from the SVG. The page (the figure as ``write_html``
writes it, plotly.js inline) is loaded once per module; each case then draws its figure afresh
in that page's chart, with the call and the chart size ``write_html`` uses (parsing the 4 MB of
plotly.js for every case cost about 2 s each).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from pushgrid.console.figures import live_figure
from pushgrid.console.format import ChartTrace, byte_unit, chart_time, is_bytes

from .browser import CHROMEDRIVER, CHROMIUM, FLAGS, missing

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))

TS = 1_800_000_000
SI = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
LABEL = re.compile(
    r"^(?P<number>[0-9.]+)(?P<prefix>[yzafpnµmkMGTPEZY]?)(?: (?P<unit>B|KiB|MiB|GiB|TiB))?$"
)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: never download
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    chrome = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield chrome
    chrome.quit()


# The call of the page write_html writes (``Plotly.newPlot(div, data, layout, config)``) in a
# purged chart, the wrapper sized as write_html sizes it (the figure's height, else 100%).
DRAW = """
const [figure, done] = arguments;
const chart = document.getElementById("chart");
Plotly.purge(chart);
const height = figure.layout.height;
chart.parentElement.style.height = height === undefined ? "100%" : height + "px";
Plotly.newPlot(chart, figure.data, figure.layout, {"responsive": true}).then(
    () => done(null), (error) => done(String(error)));
"""


@pytest.fixture(scope="module")
def page(driver: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The driver on a write_html page of a live figure: plotly.js loaded, a chart drawn."""
    path = tmp_path_factory.mktemp("axis") / "page.html"
    live_figure("connected_users", [ChartTrace("cluster", [], [])]).write_html(
        path, include_plotlyjs=True, full_html=True, div_id="chart"
    )
    driver.get(path.as_uri())
    driver.set_script_timeout(20)
    return driver


def tick_labels(driver: Any, indicator: str, value: float | None) -> tuple[list[str], str]:
    """The y tick labels of a chart of ``value``, and the byte unit its values are in."""
    from selenium.webdriver.support.ui import WebDriverWait

    divisor, unit = byte_unit(value) if is_bytes(indicator) else (1.0, "B")
    points = [] if value is None else [value / divisor]
    trace = ChartTrace("cluster", [chart_time(TS)] if points else [], list(points))
    figure = json.loads(live_figure(indicator, [trace], unit).to_json())
    error = driver.execute_async_script(DRAW, figure)
    assert error is None, f"plotly.js: {error}"
    WebDriverWait(driver, 20).until(lambda d: d.find_elements("css selector", "#chart .ytick text"))
    return [e.text for e in driver.find_elements("css selector", "#chart .ytick text")], unit


@pytest.mark.parametrize("value", [None, 0.0, 1.0, 3.0, 7.0, 1234.0, 5_000_000.0])
@pytest.mark.parametrize(
    "indicator", ["outgoing_bytes_per_second", "incoming_bytes_per_second", "connected_users"]
)
def test_live_axis_ticks_are_whole_units(page: Any, indicator: str, value: float | None) -> None:
    labels, unit = tick_labels(page, indicator, value)
    assert labels, "the axis has ticks"
    for label in labels:
        match = LABEL.match(label)
        assert match is not None, f"{indicator}={value}: unexpected tick {label!r} in {labels}"
        assert match["prefix"] in SI, f"{indicator}={value}: sub-unit tick {label!r}"
        if is_bytes(indicator):
            assert match["unit"] == unit, f"{label!r}: the values read in {unit}"
            assert match["prefix"] == "", f"{label!r}: KiB/MiB, never kB/MB"
        else:
            assert match["unit"] is None, label
        amount = float(match["number"]) * SI[match["prefix"]]
        if unit == "B":
            assert amount.is_integer(), f"{indicator}={value}: fractional tick {label!r}"
    if value is not None:
        top = LABEL.match(labels[-1])
        assert top is not None
        scaled = value / byte_unit(value)[0] if is_bytes(indicator) else value
        assert float(top["number"]) * SI[top["prefix"]] >= min(scaled, 1)
