"""Per-subject positions: epoch adoption, duplicate drop, gap detection, subscribed handling."""

from __future__ import annotations

import msgspec
import pytest

from pushgrid.client.recovery import Action, RecoveryTracker
from pushgrid.protocol.frames import (
    MessageFrame,
    MessageKind,
    Position,
    QoS,
    RecoveryStatus,
    Subscribed,
)

S = "/a/b"


def msg(
    seq: int,
    epoch: str = "e1",
    kind: MessageKind = "update",
    qos: QoS = "guaranteed",
    subject: str = S,
) -> MessageFrame:
    return MessageFrame(
        kind=kind,
        subject=subject,
        content=f"c{seq}",
        fields={},
        epoch=epoch,
        seq=seq,
        qos=qos,
        retained=True,
        ts=0,
    )


def subscribed(
    recovery: RecoveryStatus = "none",
    epoch: str | None = "e1",
    seq: int | None = 0,
    status: str = "allow",
    subject: str = S,
) -> Subscribed:
    return Subscribed(
        subject=subject,
        status="allow" if status == "allow" else "deny",
        recovery=recovery,
        epoch=epoch,
        seq=seq,
    )


def actions(tracker: RecoveryTracker, frames: list[MessageFrame]) -> list[Action]:
    return [tracker.on_message(frame).action for frame in frames]


def test_in_order_updates_are_delivered_and_advance() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=3))
    assert actions(tracker, [msg(4), msg(5), msg(6)]) == [Action.DELIVER] * 3
    assert tracker.position(S) == Position("e1", 6)


def test_duplicates_are_dropped() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    got = actions(tracker, [msg(1), msg(2), msg(2), msg(1), msg(3)])
    assert got == [Action.DELIVER, Action.DELIVER, Action.DROP, Action.DROP, Action.DELIVER]
    assert tracker.position(S) == Position("e1", 3)


def test_gap_asks_for_recovery_from_last_seq() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    assert tracker.on_message(msg(1)).deliver
    decision = tracker.on_message(msg(4))
    assert decision.action is Action.RECOVER
    assert decision.recover == Position("e1", 1)
    assert not decision.deliver
    assert tracker.recovering(S)
    assert tracker.position(S) == Position("e1", 1)  # the gap message did not move it


def test_further_gaps_while_recovering_are_dropped_silently() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=5))
    assert tracker.on_message(msg(7)).action is Action.RECOVER
    assert actions(tracker, [msg(8), msg(9)]) == [Action.DROP, Action.DROP]
    # the server answers the resubscribe: recovered messages after seq 5 follow
    tracker.on_subscribed(subscribed("recovered", seq=9))
    assert not tracker.recovering(S)
    got = actions(tracker, [msg(6, kind="recovered"), msg(7, kind="recovered"), msg(8), msg(9)])
    assert got == [Action.DELIVER] * 4
    assert actions(tracker, [msg(9), msg(10)]) == [Action.DROP, Action.DELIVER]


def test_recovered_keeps_client_position_in_same_epoch() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    actions(tracker, [msg(1), msg(2)])
    # reconnect: subscribe with recover (e1, 2); server says recovered, current seq 5
    tracker.on_subscribed(subscribed("recovered", seq=5))
    assert tracker.position(S) == Position("e1", 2)
    assert actions(tracker, [msg(3, kind="recovered"), msg(4, kind="recovered")]) == [
        Action.DELIVER,
        Action.DELIVER,
    ]


def test_up_to_date_sets_the_position() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    actions(tracker, [msg(1), msg(2)])
    tracker.on_subscribed(subscribed("up_to_date", seq=2))
    assert tracker.position(S) == Position("e1", 2)
    assert actions(tracker, [msg(2), msg(3)]) == [Action.DROP, Action.DELIVER]


@pytest.mark.parametrize("recovery", ["new_epoch", "failed"])
def test_resync_takes_the_snapshot_position(recovery: RecoveryStatus) -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    actions(tracker, [msg(1), msg(2), msg(3)])
    tracker.on_subscribed(subscribed(recovery, epoch="e2", seq=7))
    assert tracker.position(S) == Position("e2", 7)
    assert tracker.on_message(msg(7, epoch="e2", kind="snapshot")).deliver
    assert actions(tracker, [msg(7, epoch="e2"), msg(8, epoch="e2")]) == [
        Action.DROP,
        Action.DELIVER,
    ]


def test_snapshot_sets_position_even_backwards() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=10))
    assert tracker.on_message(msg(4, kind="snapshot")).deliver
    assert tracker.position(S) == Position("e1", 4)
    assert actions(tracker, [msg(5)]) == [Action.DELIVER]


def test_new_epoch_in_live_stream_is_adopted() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    actions(tracker, [msg(1), msg(2), msg(3)])
    decision = tracker.on_message(msg(1, epoch="e2"))
    assert decision.action is Action.DELIVER
    assert "epoch" in decision.reason
    assert tracker.position(S) == Position("e2", 1)
    assert actions(tracker, [msg(1, epoch="e2"), msg(2, epoch="e2")]) == [
        Action.DROP,
        Action.DELIVER,
    ]


def test_standard_qos_never_checked_nor_moves_position() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=3))
    got = actions(
        tracker, [msg(3, qos="standard"), msg(3, qos="standard"), msg(99, qos="standard")]
    )
    assert got == [Action.DELIVER] * 3
    assert tracker.position(S) == Position("e1", 3)
    assert actions(tracker, [msg(4)]) == [Action.DELIVER]


def test_first_message_without_position_is_adopted() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(epoch=None, seq=None))
    assert tracker.position(S) is None
    assert actions(tracker, [msg(17), msg(18), msg(20)]) == [
        Action.DELIVER,
        Action.DELIVER,
        Action.RECOVER,
    ]


def test_historical_messages_delivered_and_position_moves_forward() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=12))
    hist = [msg(seq, kind="historical") for seq in (8, 9, 10, 11, 12)]
    assert actions(tracker, hist) == [Action.DELIVER] * 5
    assert tracker.position(S) == Position("e1", 12)
    assert actions(tracker, [msg(12), msg(13)]) == [Action.DROP, Action.DELIVER]


def test_repeated_gaps_escalate_to_resync() -> None:
    tracker = RecoveryTracker(max_recoveries=2)
    tracker.on_subscribed(subscribed(seq=0))
    assert tracker.on_message(msg(5)).action is Action.RECOVER
    tracker.on_subscribed(subscribed("recovered", seq=5))  # but nothing in order arrives
    assert tracker.on_message(msg(7)).action is Action.RECOVER
    tracker.on_subscribed(subscribed("recovered", seq=7))
    decision = tracker.on_message(msg(9))
    assert decision.action is Action.RESYNC
    assert decision.recover is None
    # after the resync the count starts over
    tracker.on_subscribed(subscribed("none", seq=9))
    assert tracker.on_message(msg(11)).action is Action.RECOVER


def test_in_order_message_resets_the_gap_count() -> None:
    tracker = RecoveryTracker(max_recoveries=1)
    tracker.on_subscribed(subscribed(seq=0))
    assert tracker.on_message(msg(3)).action is Action.RECOVER
    tracker.on_subscribed(subscribed("recovered", seq=3))
    assert actions(tracker, [msg(1, kind="recovered")]) == [Action.DELIVER]
    assert tracker.on_message(msg(5)).action is Action.RECOVER


def test_deny_forgets_the_subject() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=4))
    tracker.on_subscribed(subscribed(status="deny", epoch=None, seq=None))
    assert tracker.position(S) is None
    assert tracker.positions() == {}


def test_subjects_are_independent_and_positions_listed() -> None:
    tracker = RecoveryTracker()
    other = "/x/y"
    tracker.on_subscribed(subscribed(seq=1))
    tracker.on_subscribed(subscribed(seq=10, epoch="z", subject=other))
    assert tracker.on_message(msg(2)).deliver
    assert tracker.on_message(msg(12, epoch="z", subject=other)).action is Action.RECOVER
    assert tracker.positions() == {S: Position("e1", 2), other: Position("z", 10)}
    tracker.forget(other)
    assert tracker.positions() == {S: Position("e1", 2)}


def test_cancel_recoveries_allows_a_new_recovery() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    assert tracker.on_message(msg(2)).action is Action.RECOVER
    assert tracker.on_message(msg(3)).action is Action.DROP
    tracker.cancel_recoveries()
    assert not tracker.recovering(S)
    decision = tracker.on_message(msg(4))
    assert decision.action is Action.RECOVER
    assert decision.recover == Position("e1", 0)


def test_reconnect_scenario_end_to_end() -> None:
    """Live 1..3, disconnect, server restarted with a new epoch: resync, then live again."""
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=0))
    assert actions(tracker, [msg(1), msg(2), msg(3)]) == [Action.DELIVER] * 3
    assert tracker.positions() == {S: Position("e1", 3)}
    tracker.cancel_recoveries()
    tracker.on_subscribed(subscribed("new_epoch", epoch="e9", seq=1))
    assert actions(tracker, [msg(1, epoch="e9", kind="snapshot"), msg(2, epoch="e9")]) == [
        Action.DELIVER,
        Action.DELIVER,
    ]
    assert tracker.position(S) == Position("e9", 2)


def test_negative_max_recoveries_rejected() -> None:
    with pytest.raises(ValueError, match="max_recoveries"):
        RecoveryTracker(max_recoveries=-1)


def conflated(seq: int, epoch: str = "e1") -> MessageFrame:
    return msgspec.structs.replace(msg(seq, epoch), conflated=True)


@pytest.mark.skipif(
    "conflated" not in MessageFrame.__struct_fields__, reason="frames without the conflated flag"
)
def test_conflated_deliveries_skip_gap_detection_but_not_duplicates() -> None:
    tracker = RecoveryTracker()
    tracker.on_subscribed(subscribed(seq=2))
    got = actions(tracker, [conflated(5), conflated(5), conflated(4), conflated(9)])
    assert got == [Action.DELIVER, Action.DROP, Action.DROP, Action.DELIVER]
    assert tracker.position(S) == Position("e1", 9)
    assert not tracker.recovering(S)
    # an unconflated message after that is checked as usual
    assert tracker.on_message(msg(11)).action is Action.RECOVER
