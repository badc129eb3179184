"""The admin API's per-second history (ADR 026): a bounded ring per member, the cluster's
per-second sums, and the parse of the members' ``Recent`` samples."""

from __future__ import annotations

import math

from pushgrid.admin_api.history import HistoryStore, SecondRing, Series, cluster_series
from pushgrid.admin_api.services.history import history, samples_of
from pushgrid.metrics.indicators import INDICATOR_NAMES

T0 = 1_800_000_000
USERS = "connected_users"
CONNECTS = "connections_per_second"


def sample(users: float, connects: float) -> dict[str, float | None]:
    return {USERS: users, CONNECTS: connects}


def test_a_ring_keeps_the_last_capacity_seconds_in_fixed_memory() -> None:
    ring = SecondRing(60)
    size = len(ring.stamps) + len(ring.values)
    for ts in range(T0, T0 + 200):
        ring.put(ts, sample(ts - T0, 1.0))
    assert len(ring.stamps) + len(ring.values) == size == 60 * (1 + len(INDICATOR_NAMES))
    series = ring.series(T0, T0 + 199)
    assert series.seconds == list(range(T0 + 140, T0 + 200))
    assert series.values[USERS] == [float(s) for s in range(140, 200)]
    assert series.values["outgoing_bytes_per_second"] == [None] * 60, "absent, not zero"
    ring.put(T0 + 100, sample(-1, -1))  # older than the ring's reach: never overwrites
    kept = ring.get(T0 + 160)
    assert kept is not None
    assert kept[0] == 160.0


def test_missing_seconds_are_absent_and_a_second_written_twice_is_rewritten() -> None:
    ring = SecondRing(100)
    ring.put(T0, sample(1, 1))
    ring.put(T0 + 3, sample(4, 4))
    ring.put(T0 + 3, sample(5, 5))  # two polls overlap: the same slot
    series = ring.series(T0, T0 + 10)
    assert series.seconds == [T0, T0 + 3]
    assert series.values[USERS] == [1.0, 5.0]
    assert ring.get(T0 + 1) is None
    assert ring.get(T0 + 100) is None, "the slot of T0 does not answer for T0 + 100"
    value = ring.get(T0)
    assert value is not None
    assert math.isnan(value[-1])


def test_store_creates_rings_at_first_sample_and_forgets_removed_members() -> None:
    store = HistoryStore(3600)
    assert store.nbytes() == 0
    store.put("m1", T0, sample(1, 0))
    store.put("m2", T0 + 5, sample(2, 0))
    assert store.nbytes() == 2 * 3600 * 8 * (1 + len(INDICATOR_NAMES))
    assert store.newest() == T0 + 5
    store.forget(["m2"])
    assert store.members() == ["m2"]
    assert store.series("m1", T0, T0).seconds == []


def test_cluster_sums_each_second_over_the_members_that_sampled_it() -> None:
    a = Series([T0, T0 + 1, T0 + 2], {USERS: [1.0, 2.0, 3.0], CONNECTS: [0.0, None, 84.0]})
    b = Series([T0, T0 + 2, T0 + 3], {USERS: [10.0, 30.0, 40.0], CONNECTS: [1.0, 2.0, 3.0]})
    for other in INDICATOR_NAMES:
        a.values.setdefault(other, [None] * 3)
        b.values.setdefault(other, [None] * 3)
    total = cluster_series([a, b], until=T0 + 2)
    # T0 + 1: b has no sample between two of its own (it hung): a gap, not a sum without b
    assert total.seconds == [T0, T0 + 2], "T0 + 3: b alone, past the end"
    assert total.values[USERS] == [11.0, 33.0]
    assert total.values[CONNECTS] == [1.0, 86.0]
    assert total.values["outgoing_bytes_per_second"] == [None, None]


def test_a_member_that_hung_leaves_a_gap_in_the_cluster_not_a_drop() -> None:
    """Issue 34, 4.5: m2 stopped for three seconds with 50 clients connected; the cluster's
    sessions must not read 10 for those seconds (m1 alone) but have no value."""
    m1 = Series(list(range(T0, T0 + 6)), {USERS: [10.0] * 6})
    m2 = Series([T0, T0 + 4, T0 + 5], {USERS: [50.0] * 3})
    for part in (m1, m2):
        for other in INDICATOR_NAMES:
            part.values.setdefault(other, [None] * len(part.seconds))
    total = cluster_series([m1, m2], until=T0 + 5)
    assert total.seconds == [T0, T0 + 4, T0 + 5]
    assert total.values[USERS] == [60.0, 60.0, 60.0]


def test_samples_of_reads_recent_current_and_sample_time() -> None:
    value = {
        "pushgrid:name=ConnectionsPerSecond,type=Indicator": {
            "Current": 84.0,
            "SampleTime": T0 + 2,
            "Recent": {str(T0): 0.0, str(T0 + 1): 3.0, str(T0 + 2): 84.0, "bad": 1, "5": None},
        },
        "pushgrid:name=ConnectedUsers,type=Indicator": {"Current": 90, "SampleTime": T0 + 2},
        "pushgrid:name=Unknown,type=Indicator": {"Current": 1, "SampleTime": T0 + 2},
        "pushgrid:type=Server": "not a map",
    }
    assert samples_of(value) == {
        T0: {CONNECTS: 0.0},
        T0 + 1: {CONNECTS: 3.0},
        T0 + 2: {CONNECTS: 84.0, USERS: 90.0},
    }
    assert samples_of(None) == {}


def test_history_defaults_to_the_last_15_minutes_and_ends_the_cluster_at_the_live_members() -> None:
    store = HistoryStore(3600)
    for ts in range(T0, T0 + 1000):
        store.put("m1", ts, sample(1, 0))
    for ts in range(T0, T0 + 998):  # m2's last two seconds are not read yet
        store.put("m2", ts, sample(2, 0))
    answer = history(store, ["m1", "m2"], None, None)
    assert (answer.since, answer.until, answer.retention) == (T0 + 100, T0 + 999, 3600)
    assert answer.cluster.seconds[-1] == T0 + 997
    assert set(answer.cluster.values[USERS]) == {3.0}
    assert [m.scope for m in answer.members] == ["m1", "m2"]
    assert len(answer.members[0].seconds) == 900
    # m2 is dead (not read lately): the cluster goes on with m1 alone
    dead = history(store, ["m1"], T0 + 990, None)
    assert dead.cluster.seconds[-1] == T0 + 999
    assert dead.cluster.values[USERS][-2:] == [1.0, 1.0]


def test_a_range_far_past_the_newest_second_is_clamped_to_the_seconds_held() -> None:
    """Issue 34 (2.3): ``until = now + 2e7`` walked 2e7 seconds on the event loop (5.3 s); the
    year 9999 never ended. The range served is clamped to the ring's reach, and said so."""
    store = HistoryStore(600)
    for ts in range(T0, T0 + 1000):
        store.put("m1", ts, sample(ts - T0, 1.0))
    answer = history(store, ["m1"], T0 - 100, T0 + 20_000_000)
    assert (answer.since, answer.until) == (T0 + 400, T0 + 999), "the seconds held"
    assert answer.members[0].seconds == list(range(T0 + 400, T0 + 1000))
    assert answer.cluster.seconds[-1] == T0 + 999
    year_9999 = 253_402_300_799
    assert history(store, [], 1, year_9999).until == T0 + 999
    assert store.series("m1", 1, year_9999).seconds[0] == T0 + 400
    assert history(store, [], T0 + 5000, None).members[0].seconds == [], "since past the end"


def test_the_copy_served_off_the_loop_does_not_move_under_the_poller() -> None:
    store = HistoryStore(60)
    store.put("m1", T0, sample(1, 1))
    twin = store.copy()
    store.put("m1", T0, sample(9, 9))
    store.put("m1", T0 + 1, sample(2, 2))
    assert twin.series("m1", T0, T0 + 1).values[USERS] == [1.0]
    assert twin.newest() == T0
    assert store.series("m1", T0, T0 + 1).values[USERS] == [9.0, 2.0]
