"""Reconnect delays: quick jittered retries, then capped exponential backoff with full jitter."""

from __future__ import annotations

import random

import pytest

from pushgrid.client.backoff import Backoff, BackoffPolicy


def test_quick_retries_are_about_base_seconds() -> None:
    policy = BackoffPolicy(base=5.0, quick_retries=3, jitter=0.3)
    rng = random.Random(1)
    delays = [policy.delay(attempt, rng) for attempt in range(3) for _ in range(200)]
    assert all(3.5 <= d <= 6.5 for d in delays)
    assert len({round(d, 6) for d in delays}) > 100  # jittered, not constant
    assert min(delays) < 4.0
    assert max(delays) > 6.0


def test_exponential_phase_bounds_and_cap() -> None:
    policy = BackoffPolicy(base=5.0, quick_retries=3, cap=120.0)
    assert [policy.upper_bound(a) for a in range(3, 10)] == [10, 20, 40, 80, 120, 120, 120]
    rng = random.Random(2)
    for attempt in range(3, 40):
        bound = policy.upper_bound(attempt)
        draws = [policy.delay(attempt, rng) for _ in range(300)]
        assert all(0 <= d <= bound for d in draws)
        # full jitter: draws spread over the whole [0, bound] range
        assert min(draws) < 0.1 * bound
        assert max(draws) > 0.9 * bound


def test_huge_attempt_numbers_stay_capped() -> None:
    policy = BackoffPolicy(base=5.0, cap=120.0)
    assert policy.upper_bound(10_000) == 120.0
    assert 0 <= policy.delay(10_000, random.Random(3)) <= 120.0


def test_small_base_for_tests() -> None:
    policy = BackoffPolicy(base=0.01, quick_retries=2, cap=0.1)
    rng = random.Random(4)
    delays = [policy.delay(a, rng) for a in range(30)]
    assert all(0 <= d <= 0.1 for d in delays)
    assert 0.007 <= delays[0] <= 0.013


def test_seeded_delays_are_reproducible() -> None:
    first = Backoff(BackoffPolicy(), random.Random(42))
    second = Backoff(BackoffPolicy(), random.Random(42))
    assert [first.next_delay() for _ in range(12)] == [second.next_delay() for _ in range(12)]


def test_backoff_counter_and_reset() -> None:
    backoff = Backoff(
        BackoffPolicy(base=1.0, quick_retries=1, jitter=0.0, cap=1000.0), random.Random(5)
    )
    assert backoff.next_delay() == 1.0  # quick retry, no jitter
    assert backoff.attempt == 1
    for _ in range(5):
        backoff.next_delay()
    assert backoff.attempt == 6
    assert backoff.policy.upper_bound(backoff.attempt) == 64.0
    backoff.reset()
    assert backoff.attempt == 0
    assert backoff.next_delay() == 1.0


def test_zero_quick_retries_starts_exponential() -> None:
    policy = BackoffPolicy(base=2.0, quick_retries=0, cap=100.0)
    assert policy.upper_bound(0) == 4.0
    assert policy.upper_bound(1) == 8.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base": -1.0},
        {"quick_retries": -1},
        {"jitter": 1.5},
        {"multiplier": 0.5},
        {"cap": -1.0},
        {"stable_after": -1.0},
    ],
)
def test_invalid_policies_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff"):
        BackoffPolicy(**kwargs)  # type: ignore[arg-type]


def test_negative_attempt_rejected() -> None:
    with pytest.raises(ValueError, match="attempt"):
        BackoffPolicy().delay(-1, random.Random())
