"""Token buckets, per-address buckets and the login back-off, on a fake clock."""

from __future__ import annotations

import pytest

from pushgrid.kernel.throttle import (
    MAX_TRACKED_ADDRESSES,
    AddressBuckets,
    AuthThrottle,
    TokenBucket,
    host_of,
)
from pushgrid.server.transport.limits import PendingConnections


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_the_burst_then_the_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert not bucket.take(0.4)  # 0.8 tokens
    assert bucket.take(0.5)  # 1 token
    assert not bucket.take(0.5)
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]  # capped at burst


def test_zero_rate_is_unlimited() -> None:
    bucket = TokenBucket(rate=0, burst=1, now=0.0)
    assert all(bucket.take(0.0) for _ in range(10_000))
    buckets = AddressBuckets(rate=0, burst=1)
    assert all(buckets.take("10.0.0.1") for _ in range(10_000))


def test_address_buckets_are_separate_and_bounded() -> None:
    clock = Clock()
    buckets = AddressBuckets(rate=1.0, burst=2, clock=clock)
    assert [buckets.take("a") for _ in range(3)] == [True, True, False]
    assert buckets.take("b")
    for i in range(MAX_TRACKED_ADDRESSES + 10):
        buckets.take(f"h{i}")
    assert len(buckets._buckets) <= MAX_TRACKED_ADDRESSES


def test_auth_back_off_doubles_up_to_the_maximum_and_success_clears() -> None:
    clock = Clock()
    throttle = AuthThrottle(free=3, max_delay=4.0, clock=clock)
    for _ in range(2):
        throttle.failed("a")
        assert throttle.retry_after("a") == 0
    throttle.failed("a")  # the third: 0.5 s
    assert throttle.retry_after("a") == pytest.approx(0.5)
    assert throttle.retry_after("b") == 0  # other addresses are not affected
    clock.now += 0.5
    assert throttle.retry_after("a") == 0
    delays = []
    for _ in range(5):
        throttle.failed("a")
        delays.append(throttle.retry_after("a"))
        clock.now += delays[-1]
    assert delays == pytest.approx([1.0, 2.0, 4.0, 4.0, 4.0])
    assert throttle.failures_total == 8
    assert throttle.throttled_total == 6
    throttle.succeeded("a")
    throttle.failed("a")
    assert throttle.retry_after("a") == 0


def test_auth_failures_are_forgiven_after_a_quiet_spell() -> None:
    clock = Clock()
    throttle = AuthThrottle(free=2, max_delay=1.0, clock=clock)
    throttle.failed("a")
    clock.now += 5
    throttle.failed("a")  # counted afresh: one failure
    assert throttle.retry_after("a") == 0


def test_pending_connections_per_address_and_in_total() -> None:
    pending = PendingConnections(max_total=3, max_per_address=2)
    assert pending.admit("a")
    assert pending.admit("a")
    assert not pending.admit("a")
    assert pending.admit("b")
    assert not pending.admit("c")  # total reached
    pending.release("a")
    assert pending.admit("c")
    assert pending.by_address("a") == 1
    for host in ("a", "b", "c"):
        pending.release(host)
    assert pending.total == 0
    assert pending.by_address("a") == 0


@pytest.mark.parametrize(
    ("remote", "host"),
    [("127.0.0.1:5000", "127.0.0.1"), ("[::1]:80", "::1"), ("?", "?")],
)
def test_host_of(remote: str, host: str) -> None:
    assert host_of(remote) == host
