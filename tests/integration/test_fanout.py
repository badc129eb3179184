"""Fan-out: every subscriber gets every message of its subjects, in order, and nothing else."""

from __future__ import annotations

import asyncio


async def test_many_subscribers_many_subjects(server, connect, subject):
    subjects = [subject("A"), subject("B"), subject("C")]
    nested = subjects[0] + "/deeper"  # a different subject, not a child of A
    subscribers = []
    for n in range(12):
        client = await connect(server)
        mine = [subjects[n % 3], subjects[(n + 1) % 3]]
        for s in mine:
            assert (await client.subscribe(s))["status"] == "allow"
        subscribers.append((client, mine))

    publishers = [await connect(server) for _ in range(3)]
    per_subject = 100

    async def publish_all(publisher, s):
        for i in range(1, per_subject + 1):
            await publisher.publish_ok(s, f"{s}#{i}")

    await asyncio.gather(*(publish_all(p, s) for p, s in zip(publishers, subjects, strict=True)))
    await publishers[0].publish_ok(nested, "not for A subscribers")

    for client, mine in subscribers:
        for s in mine:
            frames = await client.messages(per_subject, s)
            assert [f["seq"] for f in frames] == list(range(1, per_subject + 1))
            assert [f["content"] for f in frames] == [f"{s}#{i}" for i in range(1, per_subject + 1)]
        assert await client.sync() == [], "nothing of other subjects"
