"""The admin API's cluster view of a watched pattern (admin_api/services/watched.py ``merge``)."""

from __future__ import annotations

from pushgrid.admin_api.schemas_ops import MemberWatched, WatchedIndicator, WatchedPattern
from pushgrid.admin_api.services.watched import merge


def member(name: str, subjects: int, subscribers: int, rate_in: float) -> MemberWatched:
    current = {
        "incoming_messages_per_second": rate_in,
        "outgoing_messages_per_second": 10.0 * subscribers,
        "subscribers": float(subscribers),
        "subjects": float(subjects),
    }
    pattern = WatchedPattern(
        pattern="/Stocks/NYSE/*",
        source="runtime",
        sample_time=1,
        windows_time=1,
        totals={"messages_in_total": int(rate_in)},
        subscribers=subscribers,
        subjects=subjects,
        indicators={k: WatchedIndicator(current=v, unit="") for k, v in current.items()},
    )
    return MemberWatched(member=name, reachable=True, patterns=[pattern])


def test_rates_and_subscribers_add_up_but_shared_subjects_count_once() -> None:
    """Three members with subscribers on the same 40 subjects: 40 subjects, not 120 (found by
    benchmarks/ops_walk.py against `make cluster`)."""
    (cluster,) = merge(
        [member("m1", 40, 84, 0.0), member("m2", 40, 83, 120.0), member("m3", 38, 83, 0.0)]
    )
    assert cluster.members == 3
    assert cluster.subscribers == 250
    assert cluster.current["subscribers"] == 250.0
    assert cluster.current["incoming_messages_per_second"] == 120.0
    assert cluster.current["outgoing_messages_per_second"] == 2500.0
    assert cluster.current["subjects"] == 40.0
    assert cluster.totals == {"messages_in_total": 120}
