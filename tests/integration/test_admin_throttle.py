"""The admin API slows token guessing down (issue 13): after AuthFailuresBeforeBackoff wrong
tokens with one prefix from one address, 429 with Retry-After, before any lookup; a valid token
is never refused (issue 22: failures count per address and token prefix); failures with prefixes
no token has count per address too (issue 34)."""

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
            # A valid token is never refused (issue 22): failures count per address and token
            # prefix, so the guesses above block only their own prefix.
            right = {"authorization": f"Bearer {admin.tokens['viewer']}"}
            assert (await api.get(f"{API}/me", headers=right)).status_code == 200
            assert (
                await api.get(f"{API}/me", headers=guesses[-1].request.headers)
            ).status_code == 429
            # another prefix no token has is backed off with the address (issue 34)
            wrong = {"authorization": "Bearer pgt_" + "x" * 43}
            assert (await api.get(f"{API}/me", headers=wrong)).status_code == 429
    finally:
        admin.close()


async def test_many_bad_console_sign_ins_never_lock_out_a_valid_viewer(tmp_path):
    """Issue 22: every console user signs in from the admin API's own address; 477 bad
    sign-ins from there locked a valid viewer out. The console's sign-in asks /me like any
    client, so the same rule holds: the valid token gets in at once and keeps working."""
    admin = AdminHarness(tmp_path / "admin", [], auth_failures_before_backoff=3)
    try:
        async with admin.client(None) as api:
            statuses = set()
            for n in range(477):
                bad = {"authorization": f"Bearer pgt_console{n % 7}{'x' * 40}"}
                statuses.add((await api.get(f"{API}/me", headers=bad)).status_code)
            assert statuses == {401, 429}
            viewer = {"authorization": f"Bearer {admin.tokens['viewer']}"}
            for _ in range(3):
                answer = await api.get(f"{API}/me", headers=viewer)
                assert answer.status_code == 200, answer.text
                assert answer.json()["role"] == "viewer"
    finally:
        admin.close()


async def test_guesses_with_a_new_prefix_each_time_are_throttled_per_address(tmp_path):
    """Issue 34 (2.11): the back-off was keyed by (address, token prefix) only, so a guesser
    changing the prefix each time was never throttled (150 x 401, 0 x 429). Failures with
    prefixes no token has count per address too; a valid token's prefix still passes."""
    admin = AdminHarness(tmp_path / "admin", [], auth_failures_before_backoff=3)
    try:
        async with admin.client(None) as api:
            statuses = []
            for n in range(150):
                guess = {"authorization": f"Bearer pgt_{n:08d}{'y' * 36}"}
                statuses.append((await api.get(f"{API}/me", headers=guess)).status_code)
            assert statuses[:3] == [401, 401, 401]
            assert set(statuses) == {401, 429}
            assert statuses.count(429) > statuses.count(401), statuses
            viewer = {"authorization": f"Bearer {admin.tokens['viewer']}"}
            answer = await api.get(f"{API}/me", headers=viewer)
            assert answer.status_code == 200, answer.text
            # the address stays backed off for unknown prefixes (if the back-off just ended,
            # the next failure starts a new one at once)
            answers = []
            for n in range(2):
                fresh = {"authorization": f"Bearer pgt_fresh{n}{'z' * 40}"}
                answers.append(await api.get(f"{API}/me", headers=fresh))
            refused = [a for a in answers if a.status_code == 429]
            assert refused, [a.status_code for a in answers]
            assert refused[0].json()["code"] == "too_many_attempts"
    finally:
        admin.close()
