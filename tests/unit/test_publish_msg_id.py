"""The publish idempotency key (``msg_id``, docs/protocol.md 5.3): its validation rule, the
bytes of frames without it, and the per-node dedup table behind guarantee 7."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.protocol.codec import Limits, decode_client_frame, encode
from pushgrid.protocol.errors import ErrorCode, RemoteProtocolError
from pushgrid.protocol.frames import (
    MAX_SAFE_INTEGER,
    MSG_ID_MAX_LENGTH,
    Publish,
    PublishResultFrame,
    QoS,
    msg_id_error,
)
from pushgrid.server.engine.base import EngineFull, PublishRequest
from pushgrid.server.engine.dedup import DedupTable, Original
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.engine.memory import MemoryEngine


class _OldPublish(msgspec.Struct, tag_field="op", tag="publish", frozen=True):
    """The publish frame before msg_id existed."""

    subject: str
    content: str
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    retained: bool = True
    qos: QoS = "guaranteed"
    id: int | None = None


class _OldPublishResult(msgspec.Struct, tag_field="type", tag="publish_result"):
    result: str
    subject: str
    id: int | None = None
    epoch: str | None = None
    seq: int | None = None
    code: str | None = None
    reason: str | None = None


_text = st.text(max_size=8)
_ids = st.one_of(st.none(), st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER))


@settings(max_examples=200, deadline=None)
@given(
    subject=_text,
    content=_text,
    fields=st.dictionaries(_text, _text, max_size=3),
    retained=st.booleans(),
    qos=st.sampled_from(["standard", "guaranteed"]),
    request_id=_ids,
)
def test_frames_without_msg_id_keep_their_bytes(
    subject: str, content: str, fields: dict[str, str], retained: bool, qos: QoS, request_id: int
) -> None:
    new = Publish(subject, content, fields, retained, qos, request_id)
    old = _OldPublish(subject, content, fields, retained, qos, request_id)
    assert msgspec.json.encode(new) == msgspec.json.encode(old)
    result = PublishResultFrame("ok", subject, request_id, "e", 3)
    assert encode(result) == msgspec.json.encode(
        _OldPublishResult("ok", subject, request_id, "e", 3)
    )


def test_a_duplicate_answer_says_so() -> None:
    frame = PublishResultFrame("ok", "/a/b", 1, "e", 3, duplicate=True)
    assert encode(frame).endswith(b'"reason":null,"duplicate":true}')


def _decode(raw: dict[str, object]) -> Publish:
    frame = decode_client_frame(msgspec.json.encode(raw), Limits())
    assert isinstance(frame, Publish)
    return frame


def test_msg_id_decodes() -> None:
    frame = _decode({"op": "publish", "subject": "/a/b", "content": "x", "msg_id": "k-1"})
    assert frame.message_id == "k-1"
    assert _decode({"op": "publish", "subject": "/a/b", "content": "x"}).message_id is None


@pytest.mark.parametrize(
    ("msg_id", "reason"),
    [
        ("", "'msg_id' must hold 1 to 128 characters, got 0"),
        ("x" * (MSG_ID_MAX_LENGTH + 1), "'msg_id' must hold 1 to 128 characters, got 129"),
        ("a b", "'msg_id' may hold only visible ASCII characters (0x21-0x7E)"),
        ("é", "'msg_id' may hold only visible ASCII characters (0x21-0x7E)"),
    ],
)
def test_invalid_msg_id_is_an_invalid_frame_naming_the_rule(msg_id: str, reason: str) -> None:
    raw = {"op": "publish", "id": 7, "subject": "/a/b", "content": "x", "msg_id": msg_id}
    with pytest.raises(RemoteProtocolError) as caught:
        decode_client_frame(msgspec.json.encode(raw), Limits())
    assert caught.value.code == ErrorCode.INVALID_FRAME
    assert caught.value.request_id == 7
    assert str(caught.value).endswith(f"publish: {reason}")
    assert msg_id_error(msg_id) == reason


def test_mistyped_msg_id_is_an_invalid_frame() -> None:
    raw = {"op": "publish", "subject": "/a/b", "content": "x", "msg_id": 5}
    with pytest.raises(RemoteProtocolError, match=r"msg_id"):
        decode_client_frame(msgspec.json.encode(raw), Limits())


def test_longest_msg_id_is_valid() -> None:
    assert msg_id_error("~" * MSG_ID_MAX_LENGTH) is None


# --- the table --------------------------------------------------------------------------------


def test_table_forgets_after_the_window() -> None:
    table = DedupTable(window=2.0, max_keys=10)
    table.add("/a/b", "k", Original("e", 1, 1000), 1000)
    assert table.get("/a/b", "k", 3000) == Original("e", 1, 1000)
    assert table.get("/a/b", "k", 3001) is None
    table.expire(3001)
    assert len(table) == 0


def test_table_keeps_the_first_original() -> None:
    table = DedupTable(window=2.0, max_keys=10)
    table.add("/a/b", "k", Original("e", 1, 1000), 1000)
    table.add("/a/b", "k", Original("e", 5, 1500), 1500)
    assert table.get("/a/b", "k", 1600) == Original("e", 1, 1000)


def test_a_full_table_refuses_new_ids_and_forgets_no_live_one() -> None:
    table = DedupTable(window=60.0, max_keys=3)
    for i in range(3):
        table.admit("/a/b", f"k{i}", 1000 + i)
        table.add("/a/b", f"k{i}", Original("e", i + 1, 1000 + i), 1000 + i)
    with pytest.raises(EngineFull) as refused:
        table.admit("/a/b", "k3", 1010)
    assert refused.value.code is ErrorCode.DEDUP_TABLE_FULL
    assert "PublishDedupMaxKeys" in refused.value.reason
    table.admit("/a/b", "k0", 1010)  # a repeat of a live id is answered, never refused
    table.admit("/a/b", None, 1010)  # so is a publish without a msg_id
    assert table.get("/a/b", "k0", 1010) == Original("e", 1, 1000)
    table.admit("/a/b", "k3", 61_001)  # k0 is past the window: room again


def test_window_zero_turns_deduplication_off() -> None:
    table = DedupTable(window=0.0, max_keys=10)
    table.add("/a/b", "k", Original("e", 1, 1000), 1000)
    assert table.get("/a/b", "k", 1000) is None


async def test_memory_engine_stores_a_repeat_again_once_the_window_passed() -> None:
    now = [1_700_000_000.0]
    engine = MemoryEngine(EngineLimits(dedup_window=30.0), clock=lambda: now[0])
    await engine.start(lambda message: None)
    first = await engine.publish(PublishRequest("/a/b", "x", {}, msg_id="k"))
    now[0] += 29
    assert (await engine.publish(PublishRequest("/a/b", "x", {}, msg_id="k"))).duplicate
    now[0] += 2
    again = await engine.publish(PublishRequest("/a/b", "x", {}, msg_id="k"))
    assert (first.seq, again.seq, again.duplicate) == (1, 2, False)


async def test_throw_away_ids_cannot_evict_another_clients_live_id() -> None:
    """Issue 34 (2.7): 5,100 throw-away msg_ids with PublishDedupMaxKeys = 5000 evicted another
    client's id, whose retry within the window was stored again (seq 1 -> seq 2)."""
    now = [1_700_000_000.0]
    engine = MemoryEngine(
        EngineLimits(dedup_window=120.0, dedup_max_keys=5000), clock=lambda: now[0]
    )
    await engine.start(lambda message: None)
    first = await engine.publish(PublishRequest("/a/b", "x", {}, msg_id="alice-1"))
    codes = []
    for i in range(5100):
        try:
            await engine.publish(PublishRequest("/x/y", "junk", {}, msg_id=f"junk-{i}"))
        except EngineFull as exc:
            codes.append(exc.code)
    assert codes == [ErrorCode.DEDUP_TABLE_FULL] * 101, "the 4,999 that fit are stored"
    now[0] += 60
    retry = await engine.publish(PublishRequest("/a/b", "x", {}, msg_id="alice-1"))
    assert (retry.seq, retry.duplicate) == (first.seq, True), "stored once"
    plain = await engine.publish(PublishRequest("/x/y", "no id", {}))
    assert not plain.duplicate, "publishes without a msg_id are not refused"
    now[0] += 61
    assert not (await engine.publish(PublishRequest("/x/y", "j", {}, msg_id="new"))).duplicate
