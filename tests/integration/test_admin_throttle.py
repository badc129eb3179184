"""The admin API slows token guessing down per address (issue 13): after
AuthFailuresBeforeBackoff wrong tokens, 429 with Retry-After, before any lookup."""

from __future__ import annotations

import asyncio
import time

import httpx

from .pgtest import AdminHarness

API = "/api/v1"


async def test_wrong_tokens_back_off_and_a_success_clears(tmp_path):
    admin = AdminHarness(tmp_path / "admin", [], auth_failures_before_backoff=3)
    try:
        async with admin.client(None) as api:
            assert (await api.get(f"{API}/me")).status_code == 401  # no token: not a guess
            # The back-off starts at 0.5 s and doubles with each failure after it: under load a
            # guess could come after a 0.5 s block ended and the right token after a 1 s one, so
            # guess on until a block of 1.5 s or more (Retry-After >= 2) stands, bounded.
            guesses: list[httpx.Response] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                header = {"authorization": f"Bearer pgt_guess{len(guesses):040d}"}
                guesses.append(await api.get(f"{API}/me", headers=header))
                if int(guesses[-1].headers.get("retry-after", "0")) >= 2:
                    break
                if len(guesses) >= 3:
                    await asyncio.sleep(0.2)  # a blocked guess counts for nothing: wait it out
            assert [r.status_code for r in guesses[:3]] == [401, 401, 401]
            throttled = [r for r in guesses[3:] if r.status_code == 429]
            assert throttled, [r.status_code for r in guesses]
            assert throttled[0].json()["code"] == "too_many_attempts"
            assert int(throttled[0].headers["retry-after"]) >= 1
            assert int(throttled[-1].headers["retry-after"]) >= 2, [
                (r.status_code, r.headers.get("retry-after")) for r in guesses
            ]
            # The right token waits out the back-off too, then works and clears the count.
            right = {"authorization": f"Bearer {admin.tokens['viewer']}"}
            assert (await api.get(f"{API}/me", headers=right)).status_code == 429
            deadline = time.monotonic() + 30
            while (await api.get(f"{API}/me", headers=right)).status_code != 200:
                assert time.monotonic() < deadline, "the right token never got through"
                await asyncio.sleep(0.2)
            wrong = {"authorization": "Bearer pgt_" + "x" * 43}
            assert (await api.get(f"{API}/me", headers=wrong)).status_code == 401
    finally:
        admin.close()
