"""Alert rules as a Prometheus rules file (``pushgrid admin export-rules``).

Each rule becomes one alerting rule over the members' ``/metrics`` (docs/monitoring.md):
``current`` reads ``pushgrid_indicator{indicator=...}``, a window reads
``pushgrid_indicator_window{indicator=..., window=..., stat=...}``; scope ``cluster`` wraps it in
``sum(...)``, as the admin API sums the members. The YAML is written by hand with JSON-quoted
strings (JSON strings are valid YAML double-quoted scalars), so no YAML library is needed;
``tests/integration/test_alerts.py`` checks the output with ``promtool check rules``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pushgrid.ops.alerts import SIGNALS

from .schemas_ops import RuleOut


def promql(rule: RuleOut) -> str:
    if rule.window == "current":
        selector = f'pushgrid_indicator{{indicator="{rule.indicator}"}}'
    else:
        selector = (
            f'pushgrid_indicator_window{{indicator="{rule.indicator}",'
            f'window="{rule.window}",stat="{rule.stat}"}}'
        )
    if rule.scope == "cluster":
        selector = f"sum({selector})"
    return f"{selector} {rule.comparison} {rule.threshold!r}"


def _duration(seconds: float) -> str:
    return f"{int(seconds * 1000)}ms" if seconds % 1 else f"{int(seconds)}s"


def prometheus_rules(rules: Sequence[RuleOut], group: str = "pushgrid") -> str:
    """The enabled indicator rules. Rules on built-in signals (member down, restarts, ...) read
    what only the admin API merges (the health model over every member): they are listed as
    comments; deploy/prometheus has its own rules on the members' ``up`` and health gauges.

    Prometheus compares the value itself over ``for`` (no average, no hysteresis): the admin API
    is the one to trust for a jittery value."""
    skipped = [rule.name for rule in rules if rule.enabled and rule.indicator in SIGNALS]
    lines = [f"# {name}: a built-in signal, evaluated by the admin API only" for name in skipped]
    lines += ["groups:", f"  - name: {json.dumps(group)}", "    rules:"]
    enabled = [rule for rule in rules if rule.enabled and rule.indicator not in SIGNALS]
    if not enabled:
        lines[-1] = "    rules: []"
    for rule in enabled:
        summary = f"{rule.name}: {promql(rule)} ({rule.scope})"
        lines += [
            f"      - alert: {json.dumps(rule.name)}",
            f"        expr: {json.dumps(promql(rule))}",
            f"        for: {_duration(rule.for_)}",
            "        labels:",
            f"          severity: {json.dumps(rule.severity)}",
            f"          scope: {json.dumps(rule.scope)}",
            "        annotations:",
            f"          summary: {json.dumps(summary)}",
            f"          description: {json.dumps(rule.description or summary)}",
        ]
    return "\n".join(lines) + "\n"
