"""The occupancy webhook's queue bound and signature (server/occupancy_webhook.py)."""

from __future__ import annotations

import hashlib
import hmac

from pushgrid.server.occupancy_webhook import WebhookSender, signature


def test_the_signature_is_an_hmac_of_timestamp_and_body() -> None:
    body = b'{"events":[]}'
    mac = hmac.new(b"s3cret", b"1795363200." + body, hashlib.sha256).hexdigest()
    assert signature("s3cret", "1795363200", body) == f"sha256={mac}"
    assert signature("s3cret", "1795363201", body) != f"sha256={mac}"  # the time is signed


async def test_a_full_queue_drops_the_oldest_and_counts_them() -> None:
    sender = WebhookSender("http://127.0.0.1:9/hook", "k", queue=3, retries=0, timeout=1.0)
    for n in range(5):
        sender.put({"id": n})
    assert sender.dropped == 2
    assert [e["id"] for e in sender._queue] == [2, 3, 4]
