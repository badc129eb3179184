"""ADR 057: the Guaranteed engine's own JetStream publish (server/engine/pub_acks.py) answers
as nats-py's ``JetStreamContext.publish`` does, on a real nats-server: the stored sequence, a
duplicate for a repeated ``Nats-Msg-Id``, JetStream's refusal with its error code, no stream."""

from __future__ import annotations

from collections.abc import AsyncIterator

import nats
import nats.js.errors
import pytest
from nats.aio.client import Client as Nats
from nats.js.api import StorageType, StreamConfig
from natsserver import delete_streams

from pushgrid.server.engine.jetstream import WRONG_LAST_SEQUENCE
from pushgrid.server.engine.pub_acks import PubAcks


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[Nats]:
    await delete_streams(nats_url)
    client = await nats.connect(nats_url)
    await client.jsm().add_stream(
        StreamConfig(name="ACKS", subjects=["acks.>"], storage=StorageType.MEMORY)
    )
    yield client
    await client.close()


async def test_a_publish_is_answered_with_its_sequence_and_a_repeat_as_duplicate(
    nc: Nats,
) -> None:
    acks = PubAcks()
    await acks.start(nc)
    first = await acks.publish("acks.a", b"one", {"Nats-Msg-Id": "m1"}, wait=5)
    second = await acks.publish("acks.b", b"two", {"Nats-Msg-Id": "m2"}, wait=5)
    again = await acks.publish("acks.a", b"one", {"Nats-Msg-Id": "m1"}, wait=5)
    assert (first.stream, first.seq, bool(first.duplicate)) == ("ACKS", 1, False)
    assert (second.seq, bool(second.duplicate)) == (2, False)
    assert (again.seq, again.duplicate) == (1, True)
    stored = await nc.jsm().get_msg("ACKS", seq=2)
    assert (stored.subject, stored.data) == ("acks.b", b"two")


async def test_jetstream_s_refusal_and_a_missing_stream_raise_as_nats_py_does(
    nc: Nats,
) -> None:
    acks = PubAcks()
    await acks.start(nc)
    await acks.publish("acks.a", b"one", {}, wait=5)
    with pytest.raises(nats.js.errors.APIError) as refused:
        await acks.publish("acks.a", b"two", {"Nats-Expected-Last-Subject-Sequence": "0"}, wait=5)
    assert refused.value.err_code in WRONG_LAST_SEQUENCE
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await acks.publish("nostream.a", b"x", {}, wait=5)
