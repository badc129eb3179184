"""A record's JetStream publish and its acknowledgement, on one reply subscription (ADR 057).

nats-py's ``JetStreamContext.publish`` is a general request: per call a random token
(``token_hex``: a system call), an ``asyncio.wait_for`` around the answer, the answer parsed
with ``json.loads`` into a dict and then into a ``PubAck`` through its generic ``from_response``.
Measured with py-spy on a Guaranteed member under load (100 subjects), that call was the
largest single cost of the engine per acknowledged publish: 15.6% of the member's samples. This
publishes the same bytes (subject, headers, payload and a reply inbox) and waits for the
answer with a counter as token, one timer handle, and a typed msgspec decoder.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from nats.js.api import PubAck

_NO_RESPONDERS = "503"


class _Answer(msgspec.Struct):
    """What JetStream answers a publish: a PubAck, or an ``error`` object."""

    stream: str = ""
    seq: int = 0
    duplicate: bool | None = None
    domain: str | None = None
    error: dict[str, Any] | None = None


_decode = msgspec.json.Decoder(_Answer).decode


class PubAcks:
    """Publishes to JetStream and matches each acknowledgement to its publish by the token at
    the end of the reply subject."""

    def __init__(self) -> None:
        self._nc: Nats | None = None
        self._prefix = ""
        self._sent = 0
        self._waiting: dict[str, asyncio.Future[Msg]] = {}

    async def start(self, nc: Nats) -> None:
        """Subscribe to this member's reply inbox (nats-py renews it after a reconnection)."""
        if self._nc is nc:
            return
        self._nc = nc
        self._prefix = nc.new_inbox() + "."
        await nc.subscribe(self._prefix + "*", cb=self._on_answer)

    async def publish(
        self, subject: str, payload: bytes, headers: dict[str, str], wait: float
    ) -> PubAck:
        """Store ``payload`` on ``subject``; raises as ``JetStreamContext.publish`` does
        (``APIError`` for JetStream's refusals, ``NoStreamResponseError``, nats-py's
        ``TimeoutError`` after ``wait`` s)."""
        if self._nc is None:
            raise nats.errors.ConnectionClosedError
        self._sent += 1
        token = str(self._sent)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Msg] = loop.create_future()
        self._waiting[token] = answer
        timer = loop.call_later(wait, _expire, answer)
        try:
            await self._nc.publish(subject, payload, reply=self._prefix + token, headers=headers)
            msg = await answer
        finally:
            timer.cancel()
            del self._waiting[token]
        if msg.headers and msg.headers.get("Status") == _NO_RESPONDERS:
            raise nats.js.errors.NoStreamResponseError
        parsed = _decode(msg.data)
        if parsed.error is not None:
            raise nats.js.errors.APIError.from_error(parsed.error)
        return PubAck(
            stream=parsed.stream, seq=parsed.seq, domain=parsed.domain, duplicate=parsed.duplicate
        )

    async def _on_answer(self, msg: Msg) -> None:
        answer = self._waiting.get(msg.subject[len(self._prefix) :])
        if answer is not None and not answer.done():
            answer.set_result(msg)


def _expire(answer: asyncio.Future[Msg]) -> None:
    if not answer.done():
        answer.set_exception(nats.errors.TimeoutError())
