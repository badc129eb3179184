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
from pushgrid.metrics.indicators import sample_values
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
        st.floats(0.0, 0.8),  # how late after the second the sample ran
        st.floats(-0.3, 0.3),  # the wall clock's error against the monotonic clock
    ),
    min_size=3,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(rate=st.floats(200.0, 100_000.0), users=st.integers(0, 10_000), schedule=steps)
def test_a_steady_load_reads_steady(
    rate: float, users: int, schedule: list[tuple[int, float, float]]
) -> None:
    counters = Counters()
    clocks = Clocks()
    sampler = Sampler(counters, clock=clocks.wall, monotonic=clocks.monotonic)
    counters.sessions = users

    def load(at: float) -> None:
        counters.messages_out_total = math.floor(rate * at)
        counters.bytes_out_total = math.floor(rate * 250 * at)
        counters.messages_in_total = math.floor(rate / 37 * at)

    second = 1
    clocks.mono = second + 0.001
    load(clocks.mono)
    sampler.sample()  # the first reading: no rate yet
    readings: list[tuple[float, float, float, float]] = []
    for skipped, late, jitter in schedule:
        second += 1 + skipped
        clocks.mono, clocks.jitter = second + 0.001 + late, jitter
        load(clocks.mono)
        before = sampler.samples_taken
        sample = sampler.sample()
        if sampler.samples_taken == before:
            continue  # the jittered wall clock named the same second twice: the first one stays
        values = sample.values
        readings.append(
            (
                values["outgoing_messages_per_second"],
                values["outgoing_bytes_per_second"],
                values["incoming_messages_per_second"],
                values["connected_users"],
            )
        )
        model = sampler.read_model
        assert (
            model.current("outgoing_messages_per_second") == values["outgoing_messages_per_second"]
        )
        assert model.interval == sample.interval > 0
    assert readings, "the schedule took at least one sample"
    for out, out_bytes, incoming, connected in readings:
        assert out == round(out), "samples stay integers"
        assert out_bytes == round(out_bytes)
        assert abs(out - rate) <= 0.05 * rate
        assert abs(out_bytes - rate * 250) <= 0.05 * rate * 250
        assert abs(incoming - rate / 37) <= 0.05 * rate / 37 + 1.5 / 0.2  # few events: +-1.5
        assert connected == users, "a gauge is read as it is"


def test_the_rounding_remainder_is_carried() -> None:
    """Half an event a second reads 0, 1, 0, 1 ...: the samples add up to the events."""
    previous = dict.fromkeys(Counters().as_dict(), 0)
    carry: dict[str, float] = {}
    total = 0.0
    for step in range(1, 11):
        current = dict(previous, connections_total=previous["connections_total"] + step % 2)
        values, carry = sample_values(current, previous, 1.0, carry)
        total += values["connections_per_second"]
        previous = current
    assert total == 5.0


def test_a_long_period_is_divided_by_its_length() -> None:
    previous = dict.fromkeys(Counters().as_dict(), 0)
    current = dict(previous, messages_out_total=9000, sessions=7)
    values, _ = sample_values(current, previous, 2.0)
    assert values["outgoing_messages_per_second"] == 4500.0
    assert values["connected_users"] == 7.0
    values, _ = sample_values(current, None, 0.0)
    assert values["outgoing_messages_per_second"] == 0.0
