"""Polls paced by their own answers.

Dash drops the answer of a callback that is triggered again while it still runs. A page polled
by a ``dcc.Interval`` whose read takes longer than the interval (a loaded admin API, a slow
member) was therefore triggered again before each answer came, every answer was dropped and the
page stopped updating: the Subjects page never showed the snapshot it had looked up, the audit
log never listed the last actions (the suite on a loaded machine, issue 34 item 3).

Every interval-driven callback therefore disables its interval while it runs (Dash's
``running``): the next tick comes one interval after the answer, never on top of it. The Live
trace's member poll and the alert history arm one tick per answer instead (``max_intervals``),
and the Overview asks for a round from the browser only once the last one answered (its
``PACE``), which paces them the same way. ``tests/unit/test_console_polling.py`` checks every poll.
"""

from __future__ import annotations

from dash import Output


def paced(interval: str) -> list[tuple[Output, bool, bool]]:
    """``running=`` for a callback triggered by ``interval``: the interval is off meanwhile."""
    return [(Output(interval, "disabled"), True, False)]
