"""A publish whose acknowledgement was lost in a leader election (issue 23, the campaign's
"acknowledged but missing" messages), on a real JetStream stream.

What happens in the cluster: a member's record is stored but its PubAck never arrives (the
stream leader went away); the member retries the same record (same ``Nats-Msg-Id``) and the new
leader, which applied the lost attempt after it checked the retry, refuses it "wrong last
sequence". The member then re-reads the subject's head (its own lost record), plans the messages
again on top of it, with the next numbers, and sends them with the same Msg-Id: JetStream
answers a duplicate of the stored record. The old engine told the publishers the re-planned
numbers (one batch further on) and cached the re-planned record as the subject's head, so every
member held the messages at other numbers than acknowledged, and the subject's numbering had a
gap. The two faults are injected at the NATS boundary (:class:`LostAck`); everything else is the
real engine on a real nats-server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats.js.errors
import pytest
from nats.js.api import PubAck
from natsserver import delete_streams

from pushgrid.server.cluster.credentials import BusCredentials
from pushgrid.server.cluster.link import ClusterLink
from pushgrid.server.engine.base import PublishRequest
from pushgrid.server.engine.jetstream import JetStreamEngine, _Plan

# links without a ClusterMembers list: no 2 s wait for peers' hellos (tests/unit/conftest.py)

SUBJECT = "/Orders/EU/lost-ack"


class LostAck(JetStreamEngine):
    """The first attempt is stored but answered by a timeout; the second is refused "wrong last
    sequence" without being stored; every later attempt goes to JetStream unchanged."""

    attempts = 0

    async def _send(
        self, subject: str, plan: _Plan, msg_id: str, attempt: int, left: float
    ) -> PubAck:
        self.attempts += 1
        if self.attempts == 1:
            await super()._send(subject, plan, msg_id, attempt, left)
            raise TimeoutError("the acknowledgement was lost")
        if self.attempts == 2:
            raise nats.js.errors.APIError(
                code=400, err_code=10071, description="wrong last sequence"
            )
        return await super()._send(subject, plan, msg_id, attempt, left)


def member(url: str, name: str, kind: type[JetStreamEngine] = JetStreamEngine) -> JetStreamEngine:
    link = ClusterLink(name, "guaranteed", None, None, [url], BusCredentials.derive("lostack"))
    return kind(link, stream="LOSTACK", replicas=1, publish_timeout=10)


@pytest.fixture
async def engines(nats_url: str) -> AsyncIterator[tuple[JetStreamEngine, JetStreamEngine]]:
    await delete_streams(nats_url)
    faulty, reader = member(nats_url, "a", LostAck), member(nats_url, "b")
    await faulty.start(lambda message: None)
    await reader.start(lambda message: None)
    yield faulty, reader
    await faulty.close()
    await reader.close()


@pytest.mark.parametrize("msg_ids", [False, True], ids=["without msg_id", "with msg_id"])
async def test_the_publisher_is_told_the_numbers_the_stream_holds(
    engines: tuple[JetStreamEngine, JetStreamEngine], msg_ids: bool
) -> None:
    faulty, reader = engines
    contents = ["a", "b", "c"]
    answers = await asyncio.gather(
        *(
            faulty.publish(PublishRequest(SUBJECT, c, {}, msg_id=c if msg_ids else None))
            for c in contents
        )
    )
    after = await faulty.publish(PublishRequest(SUBJECT, "d", {}))
    assert isinstance(faulty, LostAck)
    assert faulty.attempts >= 3  # both faults happened
    told = {m.content: m.seq for m in [*answers, after]}
    history = {m.content: m.seq for m in await reader.history(SUBJECT, 100)}
    assert told == history, f"acknowledged {told}, the stream holds {history}"
    assert sorted(history.values()) == [1, 2, 3, 4]  # no gap, no second copy
