"""Per-subject stream positions and the client's duplicate / gap rules. Pure, no I/O.

The tracker is fed the ``subscribed`` and ``message`` frames of each subject in arrival order and
answers, per message, what the client must do (:class:`Decision`). Rules (docs/protocol.md):

- ``snapshot`` sets the position to the message's ``(epoch, seq)``; always delivered.
- ``historical`` is always delivered; it moves the position forward (or adopts a new epoch).
- standard-qos messages are always delivered and never move the position: their ``seq`` is the
  last guaranteed one and is not a sequence number of their own.
- guaranteed ``update`` / ``recovered`` messages, against the position ``(epoch, last)``:
  no position yet or a different epoch -> adopt the message's position and deliver;
  ``seq <= last`` -> duplicate, drop; ``seq == last + 1`` -> deliver and advance;
  ``seq > last + 1`` -> gap: drop the message and resubscribe with ``recover = (epoch, last)``
  (:attr:`Action.RECOVER`); the messages after ``last`` come back as ``recovered``. While that
  recovery is pending, later out-of-order messages of the subject are dropped silently. After
  ``max_recoveries`` gaps in a row with no in-order message between them the answer is
  :attr:`Action.RESYNC` instead: resubscribe without recovery and take the new snapshot.
- conflated messages (``conflated: true``, at most one per conflation period, seq jumps by
  design) are only checked for duplicates: ``seq <= last`` in the same epoch is dropped,
  anything else is delivered and becomes the position.
- ``subscribed`` (allow) ends a pending recovery and sets the position from the frame, except
  ``recovery == "recovered"`` in the same epoch, which keeps the client's position because the
  missed messages follow. ``subscribed`` (deny) forgets the subject.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pushgrid.protocol.frames import MessageFrame, Position, Subscribed

__all__ = ["Action", "Decision", "Position", "RecoveryTracker"]


def _is_conflated(frame: MessageFrame) -> bool:
    """True for a conflated delivery (the flag exists from protocol version 1.1 on)."""
    return bool(getattr(frame, "conflated", False))


class Action(StrEnum):
    """What the client does with one message."""

    DELIVER = "deliver"
    DROP = "drop"
    RECOVER = "recover"
    RESYNC = "resync"


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer for one message. ``recover`` is set for :attr:`Action.RECOVER` only.

    The message is delivered to the application if and only if ``action is Action.DELIVER``.
    """

    action: Action
    reason: str
    recover: Position | None = None

    @property
    def deliver(self) -> bool:
        return self.action is Action.DELIVER


@dataclass(slots=True)
class _SubjectState:
    position: Position | None = None
    recovering: bool = False
    gaps: int = 0


class RecoveryTracker:
    """Positions of all subjects the client tracks. Not thread-safe; one per client."""

    def __init__(self, max_recoveries: int = 2) -> None:
        if max_recoveries < 0:
            raise ValueError(f"max_recoveries must be >= 0, got {max_recoveries}")
        self._max_recoveries = max_recoveries
        self._states: dict[str, _SubjectState] = {}

    def position(self, subject: str) -> Position | None:
        """The last ``(epoch, seq)`` held for ``subject``, or None when nothing is known."""
        state = self._states.get(subject)
        return state.position if state is not None else None

    def positions(self) -> dict[str, Position]:
        """Every known position, for resubscribing with ``recover`` after a reconnect."""
        return {s: st.position for s, st in self._states.items() if st.position is not None}

    def recovering(self, subject: str) -> bool:
        """True while a gap recovery of ``subject`` waits for its ``subscribed`` answer."""
        state = self._states.get(subject)
        return state is not None and state.recovering

    def forget(self, subject: str) -> None:
        """Drop everything known about ``subject`` (after unsubscribe or deny)."""
        self._states.pop(subject, None)

    def cancel_recoveries(self, subjects: list[str] | None = None) -> None:
        """End pending recoveries (all, or of ``subjects``): after a reconnect or a refused
        resubscribe. Positions are kept."""
        for subject, state in self._states.items():
            if subjects is None or subject in subjects:
                state.recovering = False

    def on_subscribed(self, frame: Subscribed) -> None:
        """Apply one ``subscribed`` frame (see the module docstring)."""
        if frame.status != "allow":
            self.forget(frame.subject)
            return
        state = self._states.setdefault(frame.subject, _SubjectState())
        state.recovering = False
        frame_position = (
            Position(frame.epoch, frame.seq)
            if frame.epoch is not None and frame.seq is not None
            else None
        )
        if frame.recovery == "recovered":
            if state.position is not None and (
                frame_position is None or frame_position.epoch == state.position.epoch
            ):
                return
            state.position = frame_position
        elif frame.recovery == "up_to_date":
            if frame_position is not None:
                state.position = frame_position
        else:  # none, new_epoch, failed: a fresh start, the snapshot (if any) follows
            state.position = frame_position
            state.gaps = 0

    def on_message(self, frame: MessageFrame) -> Decision:
        """Decide what to do with one ``message`` frame and update the subject's position."""
        state = self._states.setdefault(frame.subject, _SubjectState())
        current = state.position
        incoming = Position(frame.epoch, frame.seq)
        if frame.kind == "snapshot":
            state.position = incoming
            return Decision(Action.DELIVER, "snapshot")
        if frame.kind == "historical":
            if current is None or current.epoch != frame.epoch or frame.seq > current.seq:
                state.position = incoming
            return Decision(Action.DELIVER, "historical")
        if frame.qos != "guaranteed":
            return Decision(Action.DELIVER, "standard qos")
        if current is None:
            state.position = incoming
            return Decision(Action.DELIVER, "first position")
        return self._guaranteed(state, current, frame)

    def _guaranteed(self, state: _SubjectState, current: Position, frame: MessageFrame) -> Decision:
        """A guaranteed update or recovered message after a known position."""
        incoming = Position(frame.epoch, frame.seq)
        if current.epoch != frame.epoch:
            state.position = incoming
            state.gaps = 0
            state.recovering = False
            return Decision(Action.DELIVER, "new epoch adopted")
        if frame.seq <= current.seq:
            return Decision(Action.DROP, f"duplicate: seq {frame.seq} <= {current.seq}")
        if _is_conflated(frame) or frame.seq == current.seq + 1:
            state.position = incoming
            state.gaps = 0
            return Decision(Action.DELIVER, "conflated" if _is_conflated(frame) else "in order")
        return self._gap(state, current, frame)

    def _gap(self, state: _SubjectState, current: Position, frame: MessageFrame) -> Decision:
        if state.recovering:
            return Decision(Action.DROP, "gap while a recovery is pending")
        state.recovering = True
        state.gaps += 1
        missing = f"gap: expected seq {current.seq + 1}, got {frame.seq}"
        if state.gaps > self._max_recoveries:
            state.gaps = 0
            return Decision(Action.RESYNC, missing + "; recovery failed repeatedly")
        return Decision(Action.RECOVER, missing, recover=current)
