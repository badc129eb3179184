"""Console sign-in with a password on the admin API (issue 35 item 5, ADR 052): sessions in
cookies, CSRF, lockout, expiry, sign-out, the users API, and API tokens unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from pushgrid.admin_api.security import Role
from pushgrid.admin_api.services.users import UserService
from pushgrid.metrics.sqlstore.admin_models import SignInSession
from pushgrid.metrics.sqlstore.models import utc_now

from .pgtest import AdminHarness, assert_problem

API = "/api/v1"
PASSWORD = "correct horse battery staple"


@pytest.fixture
def harness(tmp_path) -> Iterator[AdminHarness]:
    admin = AdminHarness(tmp_path / "signin", [])
    with admin.session_factory() as db:
        UserService(db).create("alice", Role.OPERATOR, PASSWORD)
        UserService(db).create("victor", Role.VIEWER, PASSWORD)
    yield admin
    admin.close()


async def sign_in(
    api: httpx.AsyncClient, name: str = "alice", password: str = PASSWORD
) -> httpx.Response:
    return await api.post(f"{API}/auth/login", json={"username": name, "password": password})


async def audit(harness: AdminHarness, **params: str) -> list[dict[str, object]]:
    async with harness.client("admin") as api:
        answer = await api.get(f"{API}/audit", params={"limit": 1000, **params})
    assert answer.status_code == 200, answer.text
    items: list[dict[str, object]] = answer.json()["items"]
    return items


def set_cookie_headers(response: httpx.Response) -> dict[str, str]:
    return {h.split("=", 1)[0]: h for h in response.headers.get_list("set-cookie")}


async def test_wrong_password_is_a_401_problem_and_audited(harness):
    async with harness.client(None) as api:
        answer = await sign_in(api, password="not the password at all")
        assert_problem(answer, 401, "unauthorized")
        assert "set-cookie" not in answer.headers
        unknown = await sign_in(api, name="nobody", password="not the password at all")
        assert_problem(unknown, 401, "unauthorized")
        assert unknown.json()["detail"] == answer.json()["detail"]  # names are not revealed
    entries = await audit(harness, action="auth.login")
    assert [(e["actor"], e["outcome"], e["status"]) for e in entries] == [
        ("nobody", "denied", 401),
        ("alice", "denied", 401),
    ]
    assert str(entries[1]["detail"]).startswith("wrong password;")
    assert str(entries[0]["detail"]).startswith("unknown user;")


async def test_sign_in_sets_safe_cookies_and_the_session_works(harness):
    async with harness.client(None) as api:
        answer = await sign_in(api)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert (body["name"], body["role"], body["via"]) == ("alice", "operator", "password")
        cookies = set_cookie_headers(answer)
        session, csrf = cookies["pushgrid_session"].lower(), cookies["pushgrid_csrf"].lower()
        assert "httponly" in session
        assert "samesite=lax" in session
        assert "path=/" in session
        assert "httponly" not in csrf
        assert "samesite=lax" in csrf
        assert "secure" not in session  # plain http (make up on 127.0.0.1)
        assert api.cookies["pushgrid_csrf"] == body["csrf_token"]
        me = (await api.get(f"{API}/me")).json()
        assert (me["name"], me["role"], me["token_id"]) == ("alice", "operator", body["session_id"])
    entries = await audit(harness, action="auth.login", outcome="succeeded")
    assert [(e["actor"], e["role"], e["token_id"]) for e in entries] == [
        ("alice", "operator", body["session_id"])
    ]


async def test_cookies_are_secure_over_https(harness):
    transport = httpx.ASGITransport(app=harness.app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="https://admin.test") as api:
        answer = await sign_in(api)
    assert answer.status_code == 200
    for header in set_cookie_headers(answer).values():
        assert "secure" in header.lower(), header


async def test_state_changing_requests_need_the_csrf_header(harness):
    async with harness.client(None) as api:
        csrf = (await sign_in(api)).json()["csrf_token"]
        body = {"rule_id": 999999, "target": "nowhere"}
        missing = await api.post(f"{API}/alerts/acknowledgements", json=body)
        assert_problem(missing, 403, "csrf_failed")
        wrong = await api.post(
            f"{API}/alerts/acknowledgements", json=body, headers={"X-CSRF-Token": "forged"}
        )
        assert_problem(wrong, 403, "csrf_failed")
        right = await api.post(
            f"{API}/alerts/acknowledgements", json=body, headers={"X-CSRF-Token": csrf}
        )
        assert right.status_code not in (401, 403), right.text
        assert (await api.get(f"{API}/me")).status_code == 200  # reads need no header


async def test_a_session_has_its_users_role(harness):
    async with harness.client(None) as api:
        csrf = (await sign_in(api, "victor")).json()["csrf_token"]
        answer = await api.post(
            f"{API}/alerts/acknowledgements", json={}, headers={"X-CSRF-Token": csrf}
        )
        assert_problem(answer, 403, "forbidden")
        assert_problem(await api.get(f"{API}/audit"), 403, "forbidden")


async def test_repeated_failures_lock_the_user_out(harness):
    async with harness.client(None, address="127.0.5.1") as api:
        for _ in range(5):  # SignIn.MaxFailures
            assert_problem(await sign_in(api, password="wrong password here"), 401)
        locked = await sign_in(api)  # even the right password, now
        problem = assert_problem(locked, 429, "too_many_attempts")
        assert int(locked.headers["retry-after"]) > 800  # SignIn.LockoutSeconds 900
        assert "user" in problem["detail"]
    async with harness.client(None, address="127.0.5.2") as other:
        assert_problem(await sign_in(other), 429)  # the user is locked from anywhere
    entries = await audit(harness, action="auth.login")
    assert [e["status"] for e in entries] == [429, 429, 401, 401, 401, 401, 401]
    assert str(entries[2]["detail"]).startswith("wrong password (now locked out);")
    assert str(entries[0]["detail"]).startswith("refused: the user is locked out")
    # an admin's new password clears the lockout
    async with harness.client("admin") as admin:
        reset = await admin.put(f"{API}/users/alice/password", json={"password": PASSWORD + "!"})
        assert reset.status_code == 204, reset.text
    async with harness.client(None, address="127.0.5.3") as api:
        assert (await sign_in(api, password=PASSWORD + "!")).status_code == 200


async def test_repeated_failures_lock_the_address_out(harness):
    async with harness.client(None, address="127.0.6.1") as api:
        for n in range(20):  # SignIn.AddressMaxFailures, each name new (no user lockout)
            assert_problem(await sign_in(api, f"guess{n}", "wrong password here"), 401)
        problem = assert_problem(await sign_in(api), 429, "too_many_attempts")
        assert "address" in problem["detail"]
    async with harness.client(None, address="127.0.6.2") as elsewhere:
        assert (await sign_in(elsewhere)).status_code == 200


async def test_an_unknown_name_locks_like_a_real_one(harness):
    async with harness.client(None, address="127.0.7.1") as api:
        for _ in range(5):
            assert_problem(await sign_in(api, "ghost", "wrong password here"), 401)
        assert_problem(await sign_in(api, "ghost", "wrong password here"), 429)


async def test_an_expired_or_idle_session_is_a_401(harness):
    async with harness.client(None) as api:
        await sign_in(api)
        assert (await api.get(f"{API}/me")).status_code == 200
        with harness.session_factory() as db:  # the session's end, moved into the past
            db.execute(update(SignInSession).values(expires_at=utc_now() - timedelta(seconds=1)))
            db.commit()
        assert_problem(await api.get(f"{API}/me"), 401, "unauthorized")
        await sign_in(api)
        with harness.session_factory() as db:  # no request for longer than SignIn.IdleSeconds
            db.execute(update(SignInSession).values(last_seen_at=utc_now() - timedelta(hours=1)))
            db.commit()
        assert_problem(await api.get(f"{API}/me"), 401, "unauthorized")


async def test_sign_out_ends_the_session_and_is_audited(harness):
    async with harness.client(None) as api:
        csrf = (await sign_in(api)).json()["csrf_token"]
        stolen = api.cookies["pushgrid_session"]
        assert_problem(await api.post(f"{API}/auth/logout"), 403, "csrf_failed")
        out = await api.post(f"{API}/auth/logout", headers={"X-CSRF-Token": csrf})
        assert out.status_code == 204, out.text
        assert "pushgrid_session" not in api.cookies
        assert_problem(await api.get(f"{API}/me"), 401)
        api.cookies.set("pushgrid_session", stolen)  # a copy of the cookie is dead too
        assert_problem(await api.get(f"{API}/me"), 401)
        assert_problem(await api.post(f"{API}/auth/logout"), 401)
    entries = await audit(harness, action="auth.logout", outcome="succeeded")
    assert [(e["actor"], e["status"]) for e in entries] == [("alice", 204)]


async def test_api_tokens_work_as_before_beside_a_session(harness):
    async with harness.client("operator") as api:
        await sign_in(api, "victor")  # a viewer's cookie too: the bearer token wins
        me = (await api.get(f"{API}/me")).json()
        assert (me["name"], me["role"]) == ("test-operator", "operator")
        # no CSRF header needed with a token (browsers never add Authorization themselves)
        answer = await api.post(f"{API}/alerts/acknowledgements", json={})
        assert answer.status_code == 422, answer.text
    async with harness.client(None, headers={"authorization": "Bearer pgt_forged"}) as api:
        assert_problem(await api.get(f"{API}/me"), 401)


async def test_admins_manage_users_through_the_api(harness):
    async with harness.client("admin") as admin:
        weak = await admin.post(
            f"{API}/users", json={"name": "bob", "role": "viewer", "password": "short"}
        )
        assert_problem(weak, 422, "weak_password")
        made = await admin.post(
            f"{API}/users", json={"name": "bob", "role": "viewer", "password": PASSWORD}
        )
        assert made.status_code == 201, made.text
        assert PASSWORD not in made.text
        assert "argon2" not in made.text
        again = await admin.post(
            f"{API}/users", json={"name": "bob", "role": "admin", "password": PASSWORD}
        )
        assert_problem(again, 409, "user_exists")
        names = [u["name"] for u in (await admin.get(f"{API}/users")).json()["items"]]
        assert names == ["alice", "bob", "victor"]
    async with harness.client(None) as bob:
        assert (await sign_in(bob, "bob")).status_code == 200
        async with harness.client("admin") as admin:
            assert (await admin.delete(f"{API}/users/bob")).status_code == 204
            assert_problem(await admin.delete(f"{API}/users/bob"), 404)
        assert_problem(await bob.get(f"{API}/me"), 401)  # removed: the session ended
    async with harness.client("operator") as operator:
        assert_problem(await operator.get(f"{API}/users"), 403, "forbidden")
    entries = await audit(harness, action="users.remove")
    assert [(e["target"], e["status"]) for e in entries] == [("bob", 404), ("bob", 204)]
    assert entries[1]["detail"] == "sessions ended=1"


async def test_the_audit_log_filters_sign_ins_by_time_range(harness):
    async with harness.client(None) as api:
        await sign_in(api, password="not the password at all")
        await sign_in(api)
    entries = await audit(harness, action="auth.login")
    newest, oldest = entries[0]["at"], entries[1]["at"]
    assert [e["status"] for e in entries] == [200, 401]
    before = await audit(harness, action="auth.login", until=str(newest))
    assert [e["status"] for e in before] == [401]
    since = await audit(harness, action="auth.login", since=str(newest))
    assert [e["status"] for e in since] == [200]
    async with harness.client("admin") as admin:
        backwards = await admin.get(f"{API}/audit", params={"since": newest, "until": oldest})
        assert_problem(backwards, 422)
        naive = await admin.get(f"{API}/audit", params={"until": "2026-11-28T02:00:00"})
        assert "until needs a time zone" in assert_problem(naive, 422)["detail"]
        page = await admin.get(
            f"{API}/audit", params={"offset": 1, "limit": 1, "action": "auth.login"}
        )
        assert [e["status"] for e in page.json()["items"]] == [401]


async def test_a_foreign_form_cannot_sign_a_browser_in(harness):
    """Login CSRF: a foreign page's form can send text/plain or form data, not JSON without a
    CORS preflight (which the admin API never grants); neither signs in."""
    body = '{"username": "alice", "password": "' + PASSWORD + '"}'
    async with harness.client(None) as api:
        plain = await api.post(
            f"{API}/auth/login", content=body, headers={"content-type": "text/plain"}
        )
        assert_problem(plain, 422)
        form = await api.post(f"{API}/auth/login", data={"username": "alice", "password": PASSWORD})
        assert_problem(form, 422)
        assert "pushgrid_session" not in api.cookies
        preflight = await api.options(
            f"{API}/auth/login",
            headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
        )
        assert "access-control-allow-origin" not in preflight.headers
