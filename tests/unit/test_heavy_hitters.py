"""The space-saving sketch against exact counts (metrics/heavy_hitters.py guarantees 1-3)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

import pytest

from pushgrid.metrics.heavy_hitters import SpaceSaving
from pushgrid.metrics.hotsubjects import HotSubjectSketches

CAPACITY = 100


def zipf_stream(n: int, items: int, s: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    weights = [1.0 / (rank**s) for rank in range(1, items + 1)]
    return rng.choices([f"/z/{i}" for i in range(items)], weights=weights, k=n)


def uniform_stream(n: int, items: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"/u/{rng.randrange(items)}" for _ in range(n)]


def check_guarantees(sketch: SpaceSaving, exact: dict[str, float]) -> None:
    total = sum(exact.values())
    assert sketch.total == pytest.approx(total)
    assert len(sketch) <= sketch.capacity
    bound = total / sketch.capacity
    floor = sketch.min_count()
    assert floor <= bound + 1e-6  # 2: min_count <= total / capacity
    for entry in sketch.top(sketch.capacity):
        true = exact.get(entry.item, 0.0)
        assert true <= entry.count + 1e-6, entry  # 1: never under-estimated
        assert entry.count - entry.error <= true + 1e-6, entry
        assert entry.error <= floor + 1e-6  # 2: error <= min_count
    for item, true in exact.items():  # 3: heavy items are monitored
        if true > bound + 1e-6:
            assert sketch.get(item) is not None, (item, true, bound)


def feed(sketch: SpaceSaving, stream: Iterable[str]) -> Counter[str]:
    exact: Counter[str] = Counter()
    for item in stream:
        sketch.add(item)
        exact[item] += 1
    return exact


@pytest.mark.parametrize("s", [1.1, 1.5, 2.0])
def test_skewed_stream_matches_exact_counts(s: float) -> None:
    sketch = SpaceSaving(CAPACITY)
    exact = feed(sketch, zipf_stream(50_000, 5_000, s, seed=int(s * 10)))
    check_guarantees(sketch, dict(exact))
    # On a skewed stream the true top 10 are found, in order, with small errors.
    true_top = [item for item, _ in exact.most_common(10)]
    assert [entry.item for entry in sketch.top(10)] == true_top
    for entry in sketch.top(10):
        assert entry.count - exact[entry.item] <= 50_000 / CAPACITY


def test_uniform_stream_respects_the_bound() -> None:
    sketch = SpaceSaving(CAPACITY)
    exact = feed(sketch, uniform_stream(50_000, 2_000, seed=7))
    check_guarantees(sketch, dict(exact))
    # No item is heavy: every estimate is within total/capacity of the truth, no more.
    assert max(entry.error for entry in sketch.top(CAPACITY)) <= 50_000 / CAPACITY


def test_weighted_and_decayed_stream() -> None:
    rng = random.Random(3)
    sketch = SpaceSaving(50)
    exact: dict[str, float] = {}
    for _second in range(40):
        sketch.decay(0.9)
        exact = {item: count * 0.9 for item, count in exact.items()}
        for item in zipf_stream(500, 1_000, 1.3, seed=rng.randrange(10**6)):
            weight = 1 + (hash(item) % 5)
            sketch.add(item, weight)
            exact[item] = exact.get(item, 0.0) + weight
    check_guarantees(sketch, exact)


def test_memory_is_bounded_by_capacity() -> None:
    sketch = SpaceSaving(20)
    feed(sketch, (f"/many/{i}" for i in range(100_000)))
    assert len(sketch) == 20
    assert len(sketch._heap) <= 4 * 20 + 64


def test_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="capacity"):
        SpaceSaving(0)
    with pytest.raises(ValueError, match="decay"):
        SpaceSaving(5).decay(1.5)


class FakeHub:
    """A tally source holding deltas, as the hub does (a plain test double of a Protocol)."""

    def __init__(self) -> None:
        self.tally: dict[str, list[int]] = {}
        self.subscribers: dict[str, int] = {}

    def take_tally(self) -> dict[str, list[int]]:
        tally, self.tally = self.tally, {}
        return tally

    def subscriber_counts(self) -> Iterable[tuple[str, int]]:
        return self.subscribers.items()


def test_hot_subjects_rates_converge_and_rank() -> None:
    hub = FakeHub()
    hot = HotSubjectSketches(hub, top_n=3, capacity=10, window=5.0)
    hub.subscribers = {"/a/x": 7, "/a/y": 2, "/a/z": 9, "/a/w": 1}
    for second in range(60):
        hub.tally = {
            "/a/x": [100, 300, 30_000],
            "/a/y": [10, 10, 100],
            **{f"/noise/{second}/{i}": [1, 1, 10] for i in range(20)},
        }
        hot.fold(1000 + second)
    top = hot.ranking("messages_in")
    assert [entry["subject"] for entry in top[:2]] == ["/a/x", "/a/y"]
    assert top[0]["value"] == pytest.approx(100, rel=0.05)
    assert hot.ranking("bytes_out")[0]["value"] == pytest.approx(30_000, rel=0.05)
    assert len(top[0]["history"]) == 60
    assert [(e["subject"], e["value"]) for e in hot.ranking("subscribers")] == [
        ("/a/z", 9),
        ("/a/x", 7),
        ("/a/y", 2),
    ]
    assert len(hot.document()["rankings"]["messages_out"]) == 3


def test_a_reading_after_a_blocked_loop_is_no_bump_in_the_rates() -> None:
    """Issue 21: the sampler hands over the 3 seconds one late reading completed; their deltas
    are shared among them, so a steady 100/s still reads 100/s (before: a 3x bump)."""
    hub = FakeHub()
    hot = HotSubjectSketches(hub, top_n=3, capacity=10, window=5.0)
    second = 1000
    for _ in range(60):
        hub.tally = {"/a/x": [100, 300, 30_000]}
        hot.fold_seconds([second])
        second += 1
    hub.tally = {"/a/x": [300, 900, 90_000]}  # three seconds of traffic, one reading
    hot.fold_seconds([second, second + 1, second + 2])
    top = hot.ranking("messages_in")[0]
    assert top["value"] == pytest.approx(100, rel=0.01)
    assert max(top["history"]) == pytest.approx(100, rel=0.01)
    assert hot.ts == second + 2
    assert len(top["history"]) == 60
