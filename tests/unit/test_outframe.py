"""OutFrame (ADR 018): encoded once, framed per transport; SSE events without decoding; the
engine's values framed outside the engine, byte for byte as before (ADR 024)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.protocol.codec import encode
from pushgrid.protocol.frames import (
    Keepalive,
    MessageFrame,
    MessageKind,
    Pong,
    Position,
    ServerFrame,
    Subscribed,
    Unsubscribed,
)
from pushgrid.server.core.outgoing import message_frame, message_of, snapshot_frame, update_frame
from pushgrid.server.engine.base import Published, Snapshot
from pushgrid.server.framing.outframe import OPENS, PENDS, SETS, OutFrame
from pushgrid.server.framing.wsframe import encode_text_frame, frame_payload
from pushgrid.server.transport.sse import RETRY_MS, SseEncoder, parse_last_event_id


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65_535, 65_536, 70_000])
def test_ws_frame_is_built_once_and_matches_encode_text_frame(size: int) -> None:
    out = OutFrame(b"x" * size)
    assert out.ws_frame is None  # built on first use only
    assert out.ws_size() == len(encode_text_frame(out.payload))
    frame = out.ws()
    assert frame == encode_text_frame(out.payload)
    assert out.ws() is frame  # cached: every WebSocket subscriber writes these same bytes
    assert frame_payload(frame) == out.payload


def test_the_live_update_and_the_opening_frames_of_an_engine_value() -> None:
    published = Published("/a/b", "c", {"f": "1"}, True, "guaranteed", "e1", 7, 5)
    update = update_frame(published)
    assert (update.move, update.subject, update.epoch, update.seq) == (SETS, "/a/b", "e1", 7)
    assert update.payload == encode(message_of(published, "update"))
    assert message_frame(published, "update").payload == update.payload
    recovered = message_frame(published, "recovered")
    assert recovered.move == SETS | OPENS
    standard = Published("/a/b", "c", {}, False, "standard", "e1", 7, 5)
    assert update_frame(standard).move == 0  # a standard message does not move a position
    for value in (published, standard):  # the update's short path follows the general rule
        assert update_frame(value).move == OutFrame.message(message_of(value, "update")).move


# -- the engine's values framed outside the engine: the same bytes as before (ADR 024) ----------


def _old_message(p: Published, kind: MessageKind) -> MessageFrame:
    """``Published.to_message`` as it was when the engine built frames (before ADR 024)."""
    return MessageFrame(
        kind=kind, subject=p.subject, content=p.content, fields=p.fields, epoch=p.epoch,
        seq=p.seq, qos=p.qos, retained=p.retained, ts=p.ts,
    )  # fmt: skip


def _old_out(p: Published, kind: MessageKind) -> OutFrame:
    """``Published.out``/``update`` as they were (the update's move known without looking)."""
    if kind == "update":
        move = SETS if p.qos == "guaranteed" else 0
        return OutFrame(encode(_old_message(p, "update")), move, p.subject, p.epoch, p.seq)
    return OutFrame.message(_old_message(p, kind))


def _old_snapshot_out(s: Snapshot) -> OutFrame:
    """``Snapshot.out`` as it was."""
    return OutFrame.message(
        MessageFrame(
            kind="snapshot", subject=s.subject, content=s.content, fields=s.fields,
            epoch=s.epoch, seq=s.seq, qos=s.qos, retained=True, ts=s.ts,
        )
    )  # fmt: skip


_text = st.text(max_size=12)
_published = st.builds(
    Published,
    subject=st.sampled_from(["/a/b", "/ü/\u2603", '/q/"x"']),
    content=_text,
    fields=st.dictionaries(_text, _text, max_size=3),
    retained=st.booleans(),
    qos=st.sampled_from(["standard", "guaranteed"]),
    epoch=st.sampled_from(["e1", "5f2c9a01b3e4"]),
    seq=st.integers(0, 2**53 - 1),
    ts=st.integers(0, 2**45),
)
_kinds = st.sampled_from(["update", "recovered", "historical", "snapshot"])


def _same(new: OutFrame, old: OutFrame) -> None:
    assert (new.payload, new.move, new.subject, new.epoch, new.seq) == (
        old.payload, old.move, old.subject, old.epoch, old.seq,
    )  # fmt: skip
    assert new.ws() == old.ws()


@settings(max_examples=300, deadline=None)
@given(published=_published, kind=_kinds)
def test_engine_values_frame_to_the_same_bytes_as_when_the_engine_framed_them(
    published: Published, kind: MessageKind
) -> None:
    _same(message_frame(published, kind), _old_out(published, kind))
    _same(update_frame(published), _old_out(published, "update"))
    snapshot = Snapshot(
        published.subject, published.content, published.fields, published.epoch,
        published.seq, published.ts, published.qos,
    )  # fmt: skip
    _same(snapshot_frame(snapshot), _old_snapshot_out(snapshot))


def _event_fields(data: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in data.decode().strip().splitlines():
        name, _, value = line.partition(": ")
        fields[name] = value
    return fields


def test_sse_takes_the_position_from_the_value_and_never_decodes_the_payload() -> None:
    encoder = SseEncoder(chunked=False)
    undecodable = b'{"type":"message","subject":  <not JSON at all'
    event = _event_fields(encoder.event(OutFrame(undecodable, SETS, "/a/b", "e9", 4)))
    assert event["data"] == undecodable.decode()  # written as it is
    assert event["retry"] == str(RETRY_MS)
    assert parse_last_event_id(event["id"]) == {"/a/b": Position("e9", 4)}
    # A payload that says "subscribed, up to date" moves nothing when the value says so.
    looks_like = encode(Subscribed("/c/d", "allow", "up_to_date", "e1", 3))
    assert "id" not in _event_fields(encoder.event(OutFrame(looks_like)))
    assert encoder.positions == {"/a/b": ("e9", 4)}


def test_sse_pending_subscribed_position_waits_for_its_opening_messages() -> None:
    encoder = SseEncoder(chunked=False)
    encoder.event(OutFrame.of(Subscribed("/a/b", "allow", "none", "e1", 5)))
    assert encoder.positions == {}
    snapshot = OutFrame(b"{}", SETS | OPENS, "/a/b", "e1", 5)
    assert "id" in _event_fields(encoder.event(snapshot))
    pend = OutFrame(b"{}", PENDS, "/c/d", "e2", 9)
    encoder.event(pend)
    event = _event_fields(encoder.event(OutFrame.of(Keepalive())))
    assert parse_last_event_id(event["id"]) == {
        "/a/b": Position("e1", 5),
        "/c/d": Position("e2", 9),
    }


# -- same events as the decoding encoder this replaced ------------------------------------------


class _Head(msgspec.Struct):
    type: str
    subject: str | None = None
    kind: str | None = None
    status: str | None = None
    recovery: str | None = None
    conflated: bool = False
    epoch: str | None = None
    seq: int | None = None
    qos: str | None = None


class _DecodingReference(SseEncoder):
    """The SSE encoder before ADR 018: strips the WebSocket header, decodes each frame's head."""

    def event_of_ws(self, frame: bytes) -> bytes:
        payload = frame_payload(frame)
        prefix = b""
        if self._first:
            prefix, self._first = b"retry: %d\n" % RETRY_MS, False
        if self._moves(payload):
            prefix += b"id: " + self.token() + b"\n"
        return self._chunk(prefix + b"data: " + payload + b"\n\n")

    def _moves(self, payload: bytes) -> bool:
        head = None
        if payload.startswith(b'{"type":"message"') or payload.startswith(b'{"type":"subs'):
            head = msgspec.json.decode(payload, type=_Head)
        moved = self._commit(head)
        if head is None or head.subject is None or head.epoch is None or head.seq is None:
            return moved
        position = (head.epoch, head.seq)
        if head.type == "subscribed":
            if head.status != "allow":
                return moved
            if head.recovery == "up_to_date":
                self.positions[head.subject] = position
                return True
            self._pending = (head.subject, position)
            return moved
        if head.kind != "snapshot" and head.qos != "guaranteed" and not head.conflated:
            return moved
        self.positions[head.subject] = position
        return True

    def _commit(self, head: _Head | None) -> bool:
        if self._pending is None:
            return False
        subject, position = self._pending
        if (
            head is not None
            and head.type == "message"
            and head.subject == subject
            and head.kind in ("snapshot", "recovered", "historical")
        ):
            return False
        self._pending = None
        if self.positions.get(subject) == position:
            return False
        self.positions[subject] = position
        return True


_subjects = st.sampled_from(["/a/b", "/c/d"])
_epochs = st.sampled_from(["e1", "e2"])
_seqs = st.integers(0, 4)
_messages = st.builds(
    MessageFrame,
    kind=st.sampled_from(["snapshot", "update", "recovered", "historical"]),
    subject=_subjects,
    content=st.just("c"),
    fields=st.just({}),
    epoch=_epochs,
    seq=_seqs,
    qos=st.sampled_from(["standard", "guaranteed"]),
    retained=st.booleans(),
    ts=st.just(1),
    conflated=st.booleans(),
)
_subscribed = st.builds(
    Subscribed,
    subject=_subjects,
    status=st.sampled_from(["allow", "deny"]),
    recovery=st.sampled_from(["none", "recovered", "up_to_date", "new_epoch", "failed"]),
    epoch=st.one_of(st.none(), _epochs),
    seq=st.one_of(st.none(), _seqs),
    id=st.one_of(st.none(), st.just(1)),
)
_others = st.sampled_from([Keepalive(), Pong(id=1), Unsubscribed("/a/b")])
_frames = st.lists(st.one_of(_messages, _subscribed, _others), max_size=30)


@settings(max_examples=300, deadline=None)
@given(frames=_frames, chunked=st.booleans())
def test_sse_events_are_byte_identical_to_the_decoding_encoder(
    frames: list[ServerFrame], chunked: bool
) -> None:
    start = {"/a/b": Position("e1", 1)}
    encoder, reference = SseEncoder(chunked, start), _DecodingReference(chunked, start)
    for frame in frames:
        expected = reference.event_of_ws(encode_text_frame(encode(frame)))
        assert encoder.event(OutFrame.of(frame)) == expected
    assert encoder.positions == reference.positions
