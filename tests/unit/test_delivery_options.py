"""Conflation periods and state, batch frames, SSE events and position tokens (pure code)."""

from __future__ import annotations

import json

import pytest
from wsproto.frame_protocol import FrameProtocol, Opcode

from pushgrid.protocol.frames import (
    Keepalive,
    MessageKind,
    Position,
    QoS,
    SubscribeItem,
    conflation_period,
)
from pushgrid.server.core.conflation import ConflatedSubscription
from pushgrid.server.core.outgoing import message_frame
from pushgrid.server.engine.base import Published
from pushgrid.server.framing.outframe import SETS, OutFrame
from pushgrid.server.framing.wsframe import batch_frame, encode_text_frame, frame_payload
from pushgrid.server.transport.sse import SseEncoder, parse_last_event_id, parse_position


@pytest.mark.parametrize(
    ("asked", "period"),
    [(0, 0), (78, 0), (99, 0), (100, 100), (547, 500), (887, 800), (5000, 5000), (-5, 0)],
)
def test_conflation_period_follows_the_spec_examples(asked: int, period: int) -> None:
    assert conflation_period(asked) == period
    assert SubscribeItem("/a/b", conflation=max(asked, 0)).conflation_period == max(period, 0)


def _published(seq: int, content: str, fields: dict[str, str]) -> Published:
    return Published("/Stocks/NYSE/IBM", content, fields, True, "guaranteed", "e1", seq, seq * 10)


def test_conflated_message_is_latest_content_and_union_of_period_fields() -> None:
    sent: list[OutFrame] = []
    subscription = ConflatedSubscription(sent.append, 5000, anchor=40.0)
    assert subscription.absorb(_published(3, "195", {"ask": "192"})) is True  # opens a period
    assert subscription.absorb(_published(4, "196", {"bid": "197"})) is False
    frame = subscription.take_frame()
    assert frame is not None
    message = json.loads(frame.payload)
    assert frame.move & SETS  # a conflated message moves the SSE position
    assert (frame.subject, frame.epoch, frame.seq) == (message["subject"], "e1", 4)
    assert message["content"] == "196"
    assert message["fields"] == {"ask": "192", "bid": "197"}
    assert (message["epoch"], message["seq"], message["conflated"]) == ("e1", 4, True)
    assert subscription.take_frame() is None  # nothing arrived in the next period


def test_conflation_periods_count_from_the_anchor() -> None:
    subscription = ConflatedSubscription(lambda frame: None, 5000, anchor=40.0)
    assert subscription.next_due(41.0) == 45.0
    assert subscription.next_due(43.0) == 45.0
    assert subscription.next_due(45.5) == 50.0


def test_inactive_subscription_sends_nothing() -> None:
    subscription = ConflatedSubscription(lambda frame: None, 100, anchor=0.0)
    subscription.absorb(_published(1, "x", {}))
    subscription.active = False
    assert subscription.take_frame() is None


def _decode(frame: bytes) -> str:
    protocol = FrameProtocol(client=True, extensions=[])
    protocol.receive_bytes(frame)
    (parsed,) = list(protocol.received_frames())
    assert parsed.opcode is Opcode.TEXT
    return str(parsed.payload)


@pytest.mark.parametrize("size", [0, 10, 125, 200, 70_000])
def test_batch_frame_is_one_text_frame_holding_the_payloads_in_order(size: int) -> None:
    payloads = [json.dumps({"type": "message", "n": i, "pad": "x" * size}) for i in range(3)]
    frames = [encode_text_frame(p.encode()) for p in payloads]
    assert [frame_payload(f).decode() for f in frames] == payloads
    assert json.loads(_decode(batch_frame(frames))) == [json.loads(p) for p in payloads]


def _events(data: bytes) -> list[dict[str, str]]:
    events = []
    for block in data.decode().split("\n\n"):
        if block.strip():
            fields: dict[str, str] = {}
            for line in block.splitlines():
                name, _, value = line.partition(": ")
                fields[name] = value
            events.append(fields)
    return events


def _message_frame(
    subject: str, seq: int, qos: QoS = "guaranteed", kind: MessageKind = "update"
) -> OutFrame:
    return message_frame(Published(subject, "c", {}, True, qos, "e1", seq, 0), kind)


def test_sse_events_carry_the_frame_and_an_id_with_every_subject_position() -> None:
    encoder = SseEncoder(chunked=False)
    first = _events(encoder.event(OutFrame.of(Keepalive())))
    assert first == [{"retry": "2000", "data": '{"type":"keepalive"}'}]
    encoder.event(_message_frame("/a/b", 3))
    event = _events(encoder.event(_message_frame("/c/d", 7)))[0]
    assert json.loads(event["data"])["subject"] == "/c/d"
    assert parse_last_event_id(event["id"]) == {
        "/a/b": Position("e1", 3),
        "/c/d": Position("e1", 7),
    }


def test_standard_messages_do_not_move_the_sse_position() -> None:
    encoder = SseEncoder(chunked=False)
    encoder.event(_message_frame("/a/b", 3))
    event = _events(encoder.event(_message_frame("/a/b", 3, qos="standard")))[0]
    assert "id" not in event
    assert encoder.positions == {"/a/b": ("e1", 3)}


def test_sse_chunked_encoding() -> None:
    data = SseEncoder(chunked=True).event(OutFrame(b'{"type":"keepalive"}'))
    size, _, rest = data.partition(b"\r\n")
    assert int(size, 16) == len(rest) - 2
    assert rest.endswith(b"\r\n")


@pytest.mark.parametrize("bad", ["", "not base64 !!", "eyJhIjoxfQ"])
def test_foreign_last_event_id_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="Last-Event-ID"):
        parse_last_event_id(bad)


def test_position_parameter() -> None:
    assert parse_position("/Stocks/NYSE/IBM 5f2c:12") == ("/Stocks/NYSE/IBM", Position("5f2c", 12))
    for bad in ["/a/b", "/a/b e1", "/a/b e1:x", " e1:3"]:
        with pytest.raises(ValueError, match="position"):
            parse_position(bad)
