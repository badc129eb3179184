"""The built-in alert signals: what an alert rule can read instead of an indicator. One list for
the admin API's rule checks and evaluation (admin_api/alerting.py), its OpenAPI schema
(``SignalName``) and the console's rule form. The same for the windows a rule may read
(``RuleWindow``): the API accepts exactly what the form offers (issue 35 item 4)."""

from __future__ import annotations

from typing import Final, Literal, get_args

CLUSTER: Final = "cluster"

SignalName = Literal[
    "member_down",
    "quorum_lost",
    "member_restarted",
    "slow_consumer_disconnects",
    "archive_failing",
    "stats_pipeline_failing",
    "delivery_stalled",
    "client_loss",
    "worker_restarted",
    "worker_not_answering",
    "slo_fast_burn",
    "slo_slow_burn",
]
SIGNAL_NAMES: Final[tuple[str, ...]] = get_args(SignalName)

#: ``current`` (the last per-second sample) or one of the twelve live windows (the window
#: definition, metrics/window_spec.py: tests/unit/test_alert_windows.py holds them equal)
RuleWindow = Literal[
    "current", "1m", "5m", "15m", "1h", "5h", "15h", "1d", "5d", "15d", "1mo", "5mo", "15mo"
]
RULE_WINDOWS: Final[tuple[str, ...]] = get_args(RuleWindow)

#: name -> (what the number is, the only scope it has, or "" when both make sense). Their
#: values come from the health model (metrics/health.py) and the members' own counters
#: (admin_api/alert_signals.py).
SIGNALS: Final[dict[str, tuple[str, str]]] = {
    "member_down": ("1 while the health model reports the member down, else 0", ""),
    "quorum_lost": ("1 while the member has no quorum (cannot store guaranteed messages)", ""),
    "member_restarted": ("1 at the first look after the member's start time changed", ""),
    "slow_consumer_disconnects": ("sessions closed as slow consumers, per second", ""),
    "archive_failing": ("1 while the member cannot write its metrics archive", ""),
    "stats_pipeline_failing": ("1 while the latest statistics run failed", CLUSTER),
    # the target is the canary pair publisher->receiver, not one member (ADR 049)
    "delivery_stalled": (
        "1 per pair publisher->receiver while the receiver's health reports its canaries stalled",
        "member",
    ),
    "client_loss": (
        "messages the clients of a Guaranteed member could not get back over its last 60 s"
        " (their reported resyncs + failed recoveries; none on a Standard member)",
        "",
    ),
    # the target is one process of a member, ``<member> worker <i> (pid <pid>)`` (ADR 061)
    "worker_restarted": (
        "1 at the first look after the supervisor restarted a worker process of the member",
        "member",
    ),
    "worker_not_answering": (
        "1 while a worker process of the member has not answered its heartbeat for 5 s",
        "member",
    ),
    # the target is the objective, ``slo:<name>`` (ADR 055)
    "slo_fast_burn": (
        "an objective's error-budget burn rate, the smaller of its 1 h and 5 min rates",
        "member",
    ),
    "slo_slow_burn": (
        "an objective's error-budget burn rate, the smaller of its 6 h and 30 min rates",
        "member",
    ),
}
