"""Occupancy events to an operator's URL: signed JSON POSTs, retried, from a bounded queue.

Each POST carries a batch (``{"events": [...]}``, at most :data:`BATCH` events, oldest first)
and the headers ``X-Pushgrid-Timestamp`` (Unix seconds) and ``X-Pushgrid-Signature``
(``sha256=`` + hex HMAC-SHA256 of ``timestamp + "." + body`` with ``Occupancy.WebhookSecret``),
so a receiver can check both origin and freshness. A failed POST (connection error, timeout,
any status but 2xx) is retried ``Occupancy.WebhookRetries`` times with exponential backoff from
0.5 s; then the batch is dropped with a WARNING. The queue holds ``Occupancy.WebhookQueue``
events at most: when the URL is down longer than that, the oldest events are dropped (counted
in ``dropped`` and logged once per burst). Every event has an ``id`` (member + sequence), so a
receiver can ignore a retried batch it already has.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import httpx

from pushgrid.kernel.redaction import redact_url_path

log = logging.getLogger(__name__)

BATCH = 100  # events per POST at most
FIRST_BACKOFF = 0.5


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Pushgrid-Signature`` value of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class WebhookSender:
    def __init__(self, url: str, secret: str, *, queue: int, retries: int, timeout: float) -> None:
        self.url, self._secret = url, secret
        self.retries, self.timeout = retries, timeout
        self._queue: deque[Mapping[str, Any]] = deque(maxlen=queue)
        self._ready = asyncio.Event()
        self.sent = 0  # events delivered (a 2xx answer)
        self.dropped = 0  # events lost: queue overflow or retries exhausted
        self.failures = 0  # failed POSTs

    def put(self, event: Mapping[str, Any]) -> None:
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "occupancy webhook %s: queue full (%d), %d event(s) dropped so far",
                    redact_url_path(self.url),
                    self._queue.maxlen,
                    self.dropped,
                )
        self._queue.append(event)
        self._ready.set()

    async def run(self) -> None:
        """Send until cancelled."""
        async with httpx.AsyncClient(timeout=self.timeout, trust_env=False) as client:
            while True:
                await self._ready.wait()
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                if not self._queue:
                    self._ready.clear()
                if batch:
                    await self._deliver(client, batch)

    async def _deliver(self, client: httpx.AsyncClient, batch: list[Mapping[str, Any]]) -> None:
        body = json.dumps({"events": batch}, separators=(",", ":")).encode()
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(FIRST_BACKOFF * 2 ** (attempt - 1))
            problem = await self._post(client, body)
            if problem is None:
                self.sent += len(batch)
                return
            self.failures += 1
            log.info("occupancy webhook attempt %d failed: %s", attempt + 1, problem)
        self.dropped += len(batch)
        log.warning(
            "occupancy webhook %s: %d event(s) dropped after %d attempts",
            redact_url_path(self.url),
            len(batch),
            self.retries + 1,
        )

    async def _post(self, client: httpx.AsyncClient, body: bytes) -> str | None:
        timestamp = str(int(time.time()))
        headers = {
            "content-type": "application/json",
            "x-pushgrid-timestamp": timestamp,
            "x-pushgrid-signature": signature(self._secret, timestamp, body),
        }
        try:
            answer = await client.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        if 200 <= answer.status_code < 300:
            return None
        return f"HTTP {answer.status_code}"
