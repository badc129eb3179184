"""Rates are rates (issue 21 item 1): every per-second indicator is a counter difference over the
real elapsed time, so a steady load reads steady whatever the sampler's timing.

The clock here is the test's: the load is a pure function of (monotonic) time, the sampler runs
late by up to 0.8 s, misses whole seconds (a blocked event loop) and reads a wall clock that
jitters around the monotonic one.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.metrics.counters import Counters
from pushgrid.metrics.sampler import Sampler

EPOCH = 1_795_000_000  # a whole Unix second: the wall clock is EPOCH + monotonic (+ jitter)


class Clocks:
    def __init__(self) -> None:
        self.mono = 0.0
        self.jitter = 0.0

    def wall(self) -> float:
        return EPOCH + self.mono + self.jitter

    def monotonic(self) -> float:
        return self.mono


steps = st.lists(
    st.tuples(
        st.integers(0, 3),  # whole seconds the sampler missed (event loop blocked)
        st.floats(0.0, 0.95),  # how late after the second the reading was taken
        st.floats(-0.01, 0.01),  # the wall clock's error against the monotonic clock
    ),
    min_size=3,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(rate=st.floats(200.0, 100_000.0), users=st.integers(0, 10_000), schedule=steps)
def test_a_steady_load_reads_steady(
    rate: float, users: int, schedule: list[tuple[int, float, float]]
) -> None:
    """Whatever the sampler's timing, every second reads the load's rate (within 5%), no second
    is missing, and the seconds add up to the counters once the load stops."""
    counters = Counters()
    clocks = Clocks()
    sampler = Sampler(counters, clock=clocks.wall, monotonic=clocks.monotonic)
    counters.sessions = users
    stopped_at: list[float] = []

    def load(at: float) -> None:
        at = min(at, *stopped_at) if stopped_at else at
        counters.messages_out_total = math.floor(rate * at)
        counters.bytes_out_total = math.floor(rate * 250 * at)
        counters.messages_in_total = math.floor(rate / 37 * at)

    second = 1
    clocks.mono = second + 0.001
    load(clocks.mono)
    first = counters.as_dict()
    assert sampler.sample() == [], "the first reading only starts the count"
    samples = []
    for skipped, late, jitter in schedule:
        second += 1 + skipped
        clocks.mono, clocks.jitter = second + late, jitter
        load(clocks.mono)
        taken = sampler.sample()
        samples += taken
        if taken:
            model = sampler.read_model
            assert model.ts == taken[-1].ts
            assert (
                model.current("outgoing_messages_per_second")
                == taken[-1].values["outgoing_messages_per_second"]
            )
    steady = list(samples)
    # the load stops; two more readings close every open second
    stopped_at.append(clocks.mono)
    for _ in range(2):
        second += 1
        clocks.mono, clocks.jitter = second + 0.5, 0.0
        load(clocks.mono)
        samples += sampler.sample()

    seconds = [sample.ts for sample in samples]
    assert seconds == list(range(seconds[0], seconds[0] + len(seconds))), "no second missing"
    for sample in steady[1:]:  # the first second is partly before the first reading
        values = sample.values
        out = values["outgoing_messages_per_second"]
        assert out == round(out), "samples stay integers"
        assert abs(out - rate) <= 0.05 * rate, (sample, rate)
        out_bytes = values["outgoing_bytes_per_second"]
        assert abs(out_bytes - rate * 250) <= 0.05 * rate * 250
        incoming = values["incoming_messages_per_second"]
        assert abs(incoming - rate / 37) <= 0.05 * rate / 37 + 2  # few events: +-2
        assert values["connected_users"] == users, "a gauge is read as it is"
    for name, counter in (
        ("outgoing_messages_per_second", "messages_out_total"),
        ("incoming_messages_per_second", "messages_in_total"),
        ("outgoing_bytes_per_second", "bytes_out_total"),
    ):
        total = sum(sample.values[name] for sample in samples)
        assert total == counters.as_dict()[counter] - first[counter], name


def test_a_late_reading_leaves_no_low_second() -> None:
    """The 393 .. 12,893 of issue 21: a reading 0.9 s late, then one on time 0.1 s later. Before,
    the first second read 1.9x the load and the next 0.1x; each now reads the load."""
    counters = Counters()
    clocks = Clocks()
    sampler = Sampler(counters, clock=clocks.wall, monotonic=clocks.monotonic)
    readings = [1.001, 2.001, 3.9, 4.001, 5.001, 8.2, 9.001]  # late, then 3 s blocked
    values = []
    for at in readings:
        clocks.mono = at
        counters.messages_out_total = round(4500 * at)
        values += [s.values["outgoing_messages_per_second"] for s in sampler.sample()]
    # second 1 began before the first reading (1.001): 0.999 of it was counted
    assert values[0] == 4496.0
    assert values[1:] == [4500.0] * 7, "seconds 2 .. 8, the three blocked ones too"


def test_two_readings_within_one_second_record_it_once() -> None:
    counters = Counters()
    clocks = Clocks()
    sampler = Sampler(counters, clock=clocks.wall, monotonic=clocks.monotonic)
    clocks.mono = 1.2
    sampler.sample()
    clocks.mono = 2.1
    counters.connections_total = 9
    (only,) = sampler.sample()
    clocks.mono = 2.6
    assert sampler.sample() == []
    clocks.mono = 3.0
    counters.connections_total = 18
    (second,) = sampler.sample()
    assert only.ts == EPOCH + 1
    assert second.ts == EPOCH + 2
    assert only.values["connections_per_second"] + second.values["connections_per_second"] == 18
