"""encode_text_frame: RFC 6455 section 5.2 layout, and wsproto's client side accepts it."""

from __future__ import annotations

import struct

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request, TextMessage
from wsproto.frame_protocol import FrameProtocol, Opcode

from pushgrid.protocol.errors import LocalProtocolError
from pushgrid.server.framing.wsframe import batch_frame, encode_text_frame, frame_payload

LENGTHS = [0, 1, 125, 126, 127, 65535, 65536, 70000]


def _payload(length: int) -> bytes:
    # valid UTF-8 with multi-byte characters, exactly `length` bytes
    unit = "aé日😀".encode()  # 1 + 2 + 3 + 4 bytes
    data = (unit * (length // len(unit) + 1))[:length]
    # cut back to a character boundary, then pad with ASCII to the exact length
    while True:
        try:
            data.decode("utf-8")
            break
        except UnicodeDecodeError:
            data = data[:-1]
    return data + b"x" * (length - len(data))


@pytest.mark.parametrize("length", LENGTHS)
def test_header_layout(length: int) -> None:
    payload = _payload(length)
    frame = encode_text_frame(payload)
    first, second = frame[0], frame[1]
    assert first & 0x80, "FIN set"
    assert first & 0x70 == 0, "RSV1-3 clear (no extension)"
    assert first & 0x0F == 0x1, "text opcode"
    assert second & 0x80 == 0, "server frames are not masked"
    indicator = second & 0x7F
    if length <= 125:
        assert indicator == length
        header = 2
    elif length <= 0xFFFF:
        assert indicator == 126
        assert struct.unpack("!H", frame[2:4])[0] == length
        header = 4
    else:
        assert indicator == 127
        (extended,) = struct.unpack("!Q", frame[2:10])
        assert extended == length
        assert extended >> 63 == 0, "most significant bit must be 0"
        header = 10
    assert len(frame) == header + length
    assert frame[header:] == payload


@pytest.mark.parametrize(
    ("length", "header"),
    [
        (0, b"\x81\x00"),
        (125, b"\x81\x7d"),
        (126, b"\x81\x7e\x00\x7e"),
        (65535, b"\x81\x7e\xff\xff"),
        (65536, b"\x81\x7f\x00\x00\x00\x00\x00\x01\x00\x00"),
    ],
)
def test_exact_header_bytes(length: int, header: bytes) -> None:
    frame = encode_text_frame(b"x" * length)
    assert frame[: len(header)] == header
    assert len(frame) == len(header) + length


def test_minimal_length_encoding_is_used() -> None:
    # RFC 6455: "the minimal number of bytes MUST be used to encode the length"
    assert len(encode_text_frame(b"x" * 125)) == 2 + 125
    assert len(encode_text_frame(b"x" * 126)) == 4 + 126
    assert len(encode_text_frame(b"x" * 65535)) == 4 + 65535
    assert len(encode_text_frame(b"x" * 65536)) == 10 + 65536


def test_returns_bytes() -> None:
    assert type(encode_text_frame(b"{}")) is bytes


# --- wsproto frame parser ---------------------------------------------------------------------


@pytest.mark.parametrize("length", LENGTHS)
def test_wsproto_frame_protocol_parses_it(length: int) -> None:
    payload = _payload(length)
    parser = FrameProtocol(client=True, extensions=[])
    parser.receive_bytes(encode_text_frame(payload))
    frames = list(parser.received_frames())
    assert len(frames) == 1
    frame = frames[0]
    assert frame.opcode is Opcode.TEXT
    assert frame.message_finished
    assert frame.frame_finished
    assert frame.payload == payload.decode("utf-8")


def test_wsproto_frame_protocol_parses_consecutive_frames() -> None:
    payloads = [_payload(n) for n in (0, 125, 126, 65536, 3)]
    parser = FrameProtocol(client=True, extensions=[])
    parser.receive_bytes(b"".join(encode_text_frame(p) for p in payloads))
    texts = [f.payload for f in parser.received_frames()]
    assert texts == [p.decode("utf-8") for p in payloads]


# --- full wsproto client connection -----------------------------------------------------------


def _open_client() -> WSConnection:
    client = WSConnection(ConnectionType.CLIENT)
    server = WSConnection(ConnectionType.SERVER)
    server.receive_data(client.send(Request(host="localhost", target="/ws")))
    events = list(server.events())
    assert isinstance(events[0], Request)
    client.receive_data(server.send(AcceptConnection()))
    assert any(isinstance(e, AcceptConnection) for e in client.events())
    return client


def _texts(client: WSConnection) -> tuple[list[str], bool]:
    """The text messages received, and whether every one was complete."""
    parts: list[str] = []
    messages: list[str] = []
    for event in client.events():
        assert isinstance(event, TextMessage), event
        parts.append(event.data)
        if event.message_finished:
            messages.append("".join(parts))
            parts.clear()
    return messages, not parts


@pytest.mark.parametrize("length", [0, 125, 126, 65535, 65536])
def test_wsproto_client_receives_it_whole(length: int) -> None:
    client = _open_client()
    payload = _payload(length)
    client.receive_data(encode_text_frame(payload))
    messages, complete = _texts(client)
    assert complete
    assert messages == [payload.decode("utf-8")]


@pytest.mark.parametrize("length", [0, 1, 125, 126, 300, 65535, 65536])
def test_wsproto_client_receives_it_byte_by_byte(length: int) -> None:
    client = _open_client()
    payload = _payload(length)
    received: list[str] = []
    parts: list[str] = []
    for byte in encode_text_frame(payload):
        client.receive_data(bytes((byte,)))
        for event in client.events():
            assert isinstance(event, TextMessage)
            parts.append(event.data)
            if event.message_finished:
                received.append("".join(parts))
                parts.clear()
    assert received == [payload.decode("utf-8")]
    assert not parts


@pytest.mark.parametrize("length", [65535, 65536])
def test_wsproto_client_receives_large_frames_in_chunks(length: int) -> None:
    # byte by byte through the header, then the payload in odd-sized chunks
    client = _open_client()
    payload = _payload(length)
    frame = encode_text_frame(payload)
    header = 4 if length < 65536 else 10
    chunks = [frame[i : i + 1] for i in range(header)]
    chunks += [frame[i : i + 4093] for i in range(header, len(frame), 4093)]
    received: list[str] = []
    parts: list[str] = []
    for chunk in chunks:
        client.receive_data(chunk)
        for event in client.events():
            assert isinstance(event, TextMessage)
            parts.append(event.data)
            if event.message_finished:
                received.append("".join(parts))
                parts.clear()
    assert received == [payload.decode("utf-8")]


def test_same_frame_bytes_are_valid_for_several_connections() -> None:
    frame = encode_text_frame(b'{"type":"message"}')
    for _ in range(3):
        client = _open_client()
        client.receive_data(frame)
        messages, complete = _texts(client)
        assert messages == ['{"type":"message"}']
        assert complete


@pytest.mark.parametrize(
    "frame",
    [
        FrameProtocol(client=False, extensions=[]).close(1000, "bye"),  # a close frame in a batch
        FrameProtocol(client=False, extensions=[]).ping(b"x"),
        FrameProtocol(client=False, extensions=[]).send_data("part", fin=False),  # a fragment
        FrameProtocol(client=True, extensions=[]).send_data("masked"),  # a client's (masked) frame
        b"\x81",  # cut short
    ],
)
def test_frame_payload_refuses_what_encode_text_frame_never_builds(frame: bytes) -> None:
    # A batch or an SSE event made of such a frame would break the protocol: our bug, said loudly.
    with pytest.raises(LocalProtocolError):
        frame_payload(bytes(frame))
    with pytest.raises(LocalProtocolError):
        batch_frame([encode_text_frame(b"{}"), bytes(frame)])


def test_frame_payload_of_our_own_frames() -> None:
    for length in LENGTHS:
        payload = _payload(length)
        assert frame_payload(encode_text_frame(payload)) == payload
