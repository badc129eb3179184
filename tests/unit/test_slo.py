"""Service level objectives (ADR 055): good/total events, budgets and burn rates against answers
computed independently (by hand, or by brute force over the raw events), and the burn-rate rules
in the real alert evaluator."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.admin_api.alerting import Evaluator, Rule
from pushgrid.admin_api.services.slo_recorder import objective_events
from pushgrid.admin_api.slo import (
    BURN_WINDOWS,
    FAST_BURN,
    SLOW_BURN,
    Events,
    MemberCounts,
    ObjectiveSpec,
    PatternCounts,
    budget_remaining,
    burn_rate,
    burn_rates,
    increase,
    minute_of,
    series,
    threshold_edge,
    window_events,
)
from pushgrid.protocol.latency import BUCKET_COUNT, UPPER, LatencyHistogram

T0 = 1_800_000_000  # a minute boundary (divisible by 60)


def _counts(latency: list[int] | tuple[int, ...], **loss: int) -> MemberCounts:
    return MemberCounts(1, tuple(latency), loss, 0, 0)


def test_threshold_at_an_edge_between_edges_and_under_the_first() -> None:
    assert threshold_edge(100.0) == (UPPER.index(100_000), 100.0)
    assert threshold_edge(10.0) == (UPPER.index(10_000), 10.0)
    # 50 ms lies between the edges 39.811 ms and 50.119 ms: judged at the lower one
    assert (UPPER[36], UPPER[37]) == (39_811, 50_119)
    assert threshold_edge(50.0) == (36, 39.811)
    assert threshold_edge(0.005) == (-1, 0.0)  # under the first edge (10 us): nothing is good


@settings(max_examples=200, deadline=None)
@given(
    latencies=st.lists(st.integers(min_value=0, max_value=10**8), min_size=0, max_size=300),
    threshold_ms=st.floats(min_value=0.001, max_value=100_000.0),
)
def test_latency_events_against_the_raw_latencies(
    latencies: list[int], threshold_ms: float
) -> None:
    histogram = LatencyHistogram()
    for micros in latencies:
        histogram.observe(micros)
    objective = ObjectiveSpec(1, "p", "latency", 0.99, 30, threshold_ms)
    events = objective.events(_counts(histogram.counts))
    edges = [u for u in UPPER if u <= threshold_ms * 1000]
    edge = max(edges) if edges else None
    # good: exactly the latencies at or under the edge the threshold is judged at
    assert events.good == sum(1 for x in latencies if edge is not None and x <= edge)
    assert events.total == len(latencies)
    # conservative: never more good than the true count under the threshold itself
    assert events.good <= sum(1 for x in latencies if x <= threshold_ms * 1000)


def test_latency_events_exact_at_a_power_of_ten() -> None:
    latencies = [9_999, 10_000, 10_001, 99_999, 100_000, 100_001, 5]
    histogram = LatencyHistogram()
    for micros in latencies:
        histogram.observe(micros)
    events = ObjectiveSpec(1, "p", "latency", 0.9, 30, 100.0).events(_counts(histogram.counts))
    assert (events.good, events.total) == (6, 7)
    events = ObjectiveSpec(1, "p", "latency", 0.9, 30, 10.0).events(_counts(histogram.counts))
    assert (events.good, events.total) == (3, 7)


def test_loss_and_recovery_events() -> None:
    counts = MemberCounts(
        1,
        tuple([0] * 30 + [90] + [0] * (BUCKET_COUNT - 31)),
        {"gaps": 7, "duplicates": 3, "resyncs": 2, "recovered": 7, "recovery_failed": 1},
        40,
        10,
        995,
        5,
    )
    loss = ObjectiveSpec(1, "l", "loss", 0.999, 30).events(counts)
    assert (loss.good, loss.total) == (90, 93)  # gaps recovered and duplicates are not loss
    recovery = ObjectiveSpec(1, "r", "recovery", 0.99, 30).events(counts)
    assert (recovery.good, recovery.total) == (40, 50)
    subscribe = ObjectiveSpec(1, "s", "subscribe", 0.999, 30).events(counts)
    assert (subscribe.good, subscribe.total) == (995, 1000)


def test_an_objective_of_one_member_counts_only_its_clients() -> None:
    def counts(delivered: int, resyncs: int) -> MemberCounts:
        latency = tuple([0] * 30 + [delivered] + [0] * (BUCKET_COUNT - 31))
        return MemberCounts(1, latency, {"resyncs": resyncs}, 0, 0, 0, 0)

    increases = {"m1": counts(90, 1), "m2": counts(10, 4), "m3": counts(5, 0)}
    cluster = ObjectiveSpec(1, "all", "loss", 0.99, 30)
    one = ObjectiveSpec(2, "m2-only", "loss", 0.99, 30, member="m2")
    absent = ObjectiveSpec(3, "m9-only", "loss", 0.99, 30, member="m9")
    events = objective_events([cluster, one, absent], increases)
    assert (events[1].good, events[1].total) == (105, 110)  # every member's, added
    assert (events[2].good, events[2].total) == (10, 14)  # m2's alone
    assert (events[3].good, events[3].total) == (0, 0)  # a member not listed counts nothing


def test_an_objective_of_one_pattern_counts_its_deliveries_from_the_first_report() -> None:
    def buckets(n: int) -> tuple[int, ...]:
        return tuple([0] * 30 + [n] + [0] * (BUCKET_COUNT - 31))

    def look(member: int, patterns: dict[str, PatternCounts], start: int = 1) -> MemberCounts:
        return MemberCounts(start, buckets(member), {}, 0, 0, patterns=patterns)

    first = look(10, {})  # the pattern is watched; no client has reported for it yet
    second = look(25, {"/a/*": PatternCounts(buckets(12), {"resyncs": 1})})
    third = look(40, {"/a/*": PatternCounts(buckets(20), {"resyncs": 1})})
    objective = ObjectiveSpec(1, "a", "loss", 0.99, 30, pattern="/a/*")
    other = ObjectiveSpec(2, "b", "loss", 0.99, 30, pattern="/b/*")
    step = increase(first, second)
    assert step is not None
    # the pattern's first counts are all new: it starts at zero after the previous look
    assert (objective.events(step).good, objective.events(step).total) == (12, 13)
    assert (other.events(step).good, other.events(step).total) == (0, 0)
    step = increase(second, third)
    assert step is not None
    assert (objective.events(step).good, objective.events(step).total) == (8, 8)
    # watched anew between two looks (its counters went back): what it holds now is new
    again = look(50, {"/a/*": PatternCounts(buckets(3), {})})
    step = increase(third, again)
    assert step is not None
    assert objective.events(step).total == 3


def test_burn_rate_and_budget_by_hand() -> None:
    # target 99.9 %: 10,000 events with 144 bad is an error rate of 1.44 %, 14.4 times 0.1 %
    assert burn_rate(Events(10_000 - 144, 10_000), 0.999) == pytest.approx(14.4)
    assert burn_rate(Events(0, 0), 0.999) == 0.0  # no events, no burn
    assert burn_rate(Events(50, 100), 0.5) == pytest.approx(1.0)  # spends it exactly
    # 1,000,000 events at 99.9 %: 1,000 may be bad; 250 were: 75 % of the budget is left
    assert budget_remaining(Events(1_000_000 - 250, 1_000_000), 0.999) == pytest.approx(0.75)
    assert budget_remaining(Events(1_000_000 - 3_000, 1_000_000), 0.999) == pytest.approx(-2.0)
    assert budget_remaining(Events(), 0.99) == 1.0


def test_an_hour_at_14_4_spends_2_percent_of_a_30_day_budget() -> None:
    """The SRE workbook's figure: 14.4 x 1 h / 720 h = 2 %."""
    target, per_minute = 0.999, 10_000
    now = T0 + 30 * 86_400 - 1
    minutes = {T0 + 60 * i: Events(per_minute, per_minute) for i in range(30 * 1440)}
    for i in range(30 * 1440 - 60, 30 * 1440):  # the last hour: 144 bad a minute
        minutes[T0 + 60 * i] = Events(per_minute - 144, per_minute)
    total = Events()
    for events in minutes.values():
        total += events
    assert budget_remaining(total, target) == pytest.approx(0.98)
    rates = burn_rates(minutes, now, target)
    assert rates.rates["1h"] == pytest.approx(14.4)
    assert rates.rates["5m"] == pytest.approx(14.4)
    assert rates.rates["6h"] == pytest.approx(14.4 / 6)  # 1 burning hour in 6
    assert rates.fast == pytest.approx(14.4)
    assert rates.fast >= FAST_BURN - 1e-9
    assert rates.slow == pytest.approx(14.4 / 6)
    assert rates.slow < SLOW_BURN


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 400), st.integers(0, 50), st.integers(0, 50)),
        min_size=1,
        max_size=60,
    ),
    st.integers(0, 59),
    st.sampled_from([0.9, 0.99, 0.999]),
)
def test_windows_against_brute_force_over_raw_events(
    raw: list[tuple[int, int, int]], offset: int, target: float
) -> None:
    """Each minute's events as individual timestamped events; a window is its whole minutes."""
    minutes: dict[int, Events] = {}
    flat: list[tuple[int, bool]] = []
    for back, good, bad in raw:
        minute = T0 - 60 * back
        minutes[minute] = minutes.get(minute, Events()) + Events(good, good + bad)
        flat += [(minute, True)] * good + [(minute, False)] * bad
    now = T0 + offset
    rates = burn_rates(minutes, now, target)
    for name, seconds in BURN_WINDOWS.items():
        inside = [ok for minute, ok in flat if minute_of(now) - minute < seconds]
        expected = 0.0 if not inside else (inside.count(False) / len(inside)) / (1 - target)
        assert math.isclose(rates.rates[name], expected, rel_tol=1e-9, abs_tol=1e-12), name
    assert rates.fast == min(rates.rates["1h"], rates.rates["5m"])
    assert rates.slow == min(rates.rates["6h"], rates.rates["30m"])


def test_a_five_minute_window_is_the_current_minute_and_four_before() -> None:
    minutes = {T0 - 60 * i: Events(0, 1) for i in range(10)}
    assert window_events(minutes, T0 + 30, 300) == Events(0, 5)
    assert window_events(minutes, T0 + 59, 300) == Events(0, 5)


def test_increase_between_looks_and_after_a_restart() -> None:
    first = MemberCounts(1, (1, 2), {"resyncs": 1}, 5, 1, 10, 0)
    later = MemberCounts(1, (4, 2), {"resyncs": 3}, 9, 1, 17, 2)
    assert increase(None, first) is None  # the first look is the baseline
    assert increase(first, later) == MemberCounts(1, (3, 0), {"resyncs": 2}, 4, 0, 7, 2)
    restarted = MemberCounts(2, (1, 0), {"resyncs": 0}, 1, 0)  # a new start time
    assert increase(later, restarted) == restarted
    went_back = MemberCounts(1, (0, 2), {"resyncs": 3}, 9, 1)  # a counter went back
    assert increase(later, went_back) == went_back


def test_series_steps_by_hand() -> None:
    minutes = [(T0, Events(90, 100)), (T0 + 60, Events(100, 100)), (T0 + 180, Events(80, 100))]
    points = series(minutes, 0.9, 120)  # two minutes a step
    # step 1: 10 bad of 200 (allowed 20): budget 0.5 left, burn (10/200)/0.1 = 0.5
    # step 2 (T0+120..): 20 bad of 100; period so far 30 bad of 300 (allowed 30): 0 left, burn 2
    assert [start for start, _, _ in points] == [T0, T0 + 120]
    assert [left for _, left, _ in points] == pytest.approx([0.5, 0.0])
    assert [burn for _, _, burn in points] == pytest.approx([0.5, 2.0])


def _rule(rule_id: int, signal: str, threshold: float, clear_for: float) -> Rule:
    return Rule(
        rule_id,
        signal,
        signal,
        "current",
        "max",
        ">=",
        threshold,
        0,
        "warning",
        "member",
        clear_for=clear_for,
    )


def test_multiwindow_rules_in_the_alert_evaluator() -> None:
    """A short burst burns the 5-minute window only: no fast-burn alert; a burn over the whole
    hour fires it; the slow alert needs the 6-hour window too."""
    target = 0.99
    fast = _rule(1, "slo_fast_burn", FAST_BURN, 60)
    slow = _rule(2, "slo_slow_burn", SLOW_BURN, 300)
    rng = random.Random(7)
    evaluator = Evaluator()

    def step(minutes: dict[int, Events], now: float) -> list[str]:
        rates = burn_rates(minutes, now, target)
        readings = {
            "slo:p99": {
                ("slo_fast_burn", "current", "current"): rates.fast,
                ("slo_slow_burn", "current", "current"): rates.slow,
            }
        }
        return [
            f"{c.alert.rule.name}:{c.state}"
            for c in evaluator.evaluate([fast, slow], readings, now)
        ]

    now = T0 + 6 * 3600
    quiet = {now - 60 * i - 60: Events(1000, 1000) for i in range(6 * 60)}
    burst = dict(quiet)
    burst[minute_of(now)] = Events(0, 1000)  # 100 % bad for one minute
    rates = burn_rates(burst, now, target)
    assert rates.rates["5m"] > FAST_BURN > rates.rates["1h"]
    assert step(burst, now) == []
    burning = {m: Events(1000 - rng.randint(200, 300), 1000) for m in quiet}
    burning[minute_of(now)] = Events(700, 1000)
    assert step(burning, now + 1) == ["slo_fast_burn:firing", "slo_slow_burn:firing"]
    healed = {**burning, minute_of(now) + 60: Events(10**9, 10**9)}
    assert step(healed, now + 61) == []  # clearing: resolved after clear_for
    assert step(healed, now + 122) == ["slo_fast_burn:resolved"]
