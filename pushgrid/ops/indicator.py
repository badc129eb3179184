"""The Indicator MBeans (``pushgrid:type=Indicator,name=<Name>``): one per spec indicator.

Besides ``Current``, ``SampleTime``, ``Recent``, ``Total`` and ``Windows`` (every window's
statistics as one map), each window statistic is also a scalar attribute named
``<label><window>`` (``Max1m``, ``Average1m``, ``StdDev1m``, ``Count1m``): what JMX consoles and
jmxquery can read, as the bridge serves ``Windows`` as TabularData they do not print.
"""

from __future__ import annotations

from typing import Final

#: window statistic -> attribute prefix
WINDOW_LABELS: Final = {"max": "Max", "avg": "Average", "stddev": "StdDev", "count": "Count"}


def window_attribute(stat: str, window: str) -> str:
    """The scalar attribute of one statistic of one window: ``("max", "1m")`` -> ``Max1m``."""
    return f"{WINDOW_LABELS[stat]}{window}"
