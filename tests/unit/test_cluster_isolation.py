"""When a Guaranteed member counts as cut off from its cluster (server/cluster/isolation.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pushgrid.server.cluster.isolation import (
    IsolationChange,
    IsolationDetector,
    Progress,
    cluster_loss,
)
from pushgrid.server.cluster.status import ClusterStatus, MemberView, standalone_status

TIMEOUT = 2.0


def member(index: int, state: str = "up", seed: bool = True) -> MemberView:
    return MemberView(f"m{index}", index, f"10.0.0.{index}:7100", seed, state, index == 1)  # type: ignore[arg-type]


def status(*states: str, quorum: bool = True, connected: bool = True) -> ClusterStatus:
    members = tuple(member(i, s) for i, s in enumerate(states, 1))
    return ClusterStatus(
        engine="nats",
        mode="guaranteed",
        members=members,
        seeds=len(members),
        quorum_size=len(members) // 2 + 1,
        quorum=quorum,
        nats_connected=connected,
    )


def test_a_member_hearing_a_quorum_of_seeds_with_a_stream_leader_sees_its_cluster() -> None:
    assert cluster_loss(status("up", "up", "down")) is None


@pytest.mark.parametrize(
    ("seen", "words"),
    [
        (status("up", "down", "down"), "hears 1 of 3 seed members"),
        (status("up", "up", "up", connected=False), "no connection to its NATS node"),
    ],
)
def test_what_counts_as_a_lost_cluster(seen: ClusterStatus, words: str) -> None:
    loss = cluster_loss(seen)
    assert loss is not None
    assert words in loss


def test_an_election_seen_with_a_quorum_of_seeds_is_not_a_loss() -> None:
    """Every member waits for the new stream leader alike: no member is better to go to."""
    assert cluster_loss(status("up", "up", "down", quorum=False)) is None


def test_without_seed_members_a_stream_leader_with_a_quorum_decides() -> None:
    external = replace(status("up"), members=(member(1, seed=False),), seeds=3, quorum_size=2)
    assert cluster_loss(external) is None
    loss = cluster_loss(replace(external, quorum=False))
    assert loss is not None
    assert "no stream leader" in loss


def test_non_seed_members_do_not_count_towards_the_quorum() -> None:
    seen = status("up", "down", "down")
    seen = replace(seen, members=(*seen.members, member(4, seed=False), member(5, seed=False)))
    assert cluster_loss(seen) is not None


def test_standalone_and_standard_members_are_never_judged() -> None:
    assert cluster_loss(standalone_status("a")) is None
    assert cluster_loss(replace(status("up", "down", "down"), mode="standard")) is None


def test_isolated_only_after_the_loss_lasts_the_timeout_then_rejoins_at_once() -> None:
    detector = IsolationDetector(TIMEOUT)
    assert detector.observe(0.0, None, None) is None
    assert detector.observe(1.0, "lost", None) is None
    assert detector.observe(2.9, "lost", None) is None
    assert not detector.isolated
    assert detector.observe(3.0, "lost again", None) is IsolationChange.ISOLATED
    assert detector.reason == "lost again"
    assert detector.observe(10.0, "still", None) is None  # one change per isolation
    assert detector.reason == "still"
    assert detector.observe(10.5, None, None) is IsolationChange.REJOINED
    assert detector.reason is None
    assert detector.observe(11.0, None, None) is None


def test_a_short_loss_is_forgotten() -> None:
    detector = IsolationDetector(TIMEOUT)
    detector.observe(0.0, "lost", None)
    detector.observe(1.5, None, None)
    assert detector.observe(3.0, "lost", None) is None  # the clock starts again
    assert detector.observe(5.0, "lost", None) is IsolationChange.ISOLATED


def test_a_member_delivering_with_a_steady_small_lag_is_not_behind() -> None:
    detector = IsolationDetector(TIMEOUT)
    for tick in range(100):
        now = tick * 0.25
        # the stream always holds 10 records more than were delivered a moment later
        assert detector.observe(now, None, Progress(tick * 10 + 10, tick * 10)) is None


def test_records_left_undelivered_past_the_timeout_count_as_a_loss() -> None:
    detector = IsolationDetector(TIMEOUT)
    assert detector.observe(0.0, None, Progress(100, 100)) is None
    assert detector.observe(1.0, None, Progress(150, 100)) is None  # 101..150 pending since 1.0
    assert detector.observe(2.9, None, Progress(160, 140)) is None
    assert detector.observe(3.0, None, Progress(170, 149)) is None  # behind from here
    assert not detector.isolated
    assert detector.observe(5.0, None, Progress(170, 149)) is IsolationChange.ISOLATED
    assert detector.reason is not None
    assert "behind" in detector.reason
    assert detector.observe(5.5, None, Progress(170, 170)) is IsolationChange.REJOINED


def test_a_zero_timeout_isolates_at_the_first_loss() -> None:
    detector = IsolationDetector(0.0)
    assert detector.observe(0.0, "lost", None) is IsolationChange.ISOLATED
