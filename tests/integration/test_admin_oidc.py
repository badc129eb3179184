"""Single sign-on against a real OpenID provider on 127.0.0.1 (issue 35 item 5, ADR 052).

The provider is ``oidc-provider-mock`` (PyPI; Authlib's server underneath) served by werkzeug in a
thread on its own port; the admin API is served by uvicorn on another. The test is the browser:
it follows the redirects itself and answers the provider's sign-in form, so every request of the
authorization code flow (start, authorize, callback, token, JWKS) goes over real HTTP.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import werkzeug.serving

from .pgtest import AdminHarness, assert_problem, free_port, serve_in_thread

API = "/api/v1"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    import oidc_provider_mock

    server = werkzeug.serving.make_server(
        "127.0.0.1", free_port(), oidc_provider_mock.app(require_nonce=True), threaded=True
    )
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    issuer = f"http://127.0.0.1:{server.server_port}"
    users = {
        "olga": {"preferred_username": "olga", "groups": ["staff", "push-ops"]},
        "ada": {"preferred_username": "ada", "groups": ["push-admins", "push-ops"]},
        "eve": {"preferred_username": "eve", "groups": ["staff"]},
    }
    with httpx.Client(base_url=issuer) as http:
        for sub, claims in users.items():
            assert http.put(f"/users/{sub}", json=claims).status_code < 300
    try:
        yield issuer
    finally:
        server.shutdown()
        thread.join(10)


@pytest.fixture
def admin_url(tmp_path, provider) -> Iterator[str]:
    harness = AdminHarness(
        tmp_path / "oidc",
        [],
        oidc_issuer=provider,
        oidc_client_id="pushgrid-console",
        oidc_client_secret="not-checked-by-the-mock",
        oidc_role_claim="groups",
        oidc_role_map=["push-ops=operator", "push-admins=admin"],
    )
    port = free_port()
    with serve_in_thread(harness.app, port):
        yield f"http://127.0.0.1:{port}"
    harness.close()


def sign_in_at_provider(browser: httpx.Client, admin_url: str, sub: str) -> httpx.Response:
    """Start at the admin API, sign in as ``sub`` at the provider; the provider's redirect."""
    start = browser.get(f"{admin_url}{API}/auth/oidc/start")
    assert start.status_code == 303, start.text
    authorize = start.headers["location"]
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["response_type"] == ["code"]
    assert all(len(query[key][0]) >= 43 for key in ("nonce", "state", "code_challenge"))
    form = browser.get(authorize)
    assert form.status_code == 200, form.text
    back = browser.post(authorize, data={"sub": sub})
    assert back.status_code == 302, back.text
    assert back.headers["location"].startswith(f"{admin_url}{API}/auth/oidc/callback?")
    return back


def test_the_whole_code_flow_signs_in_with_the_role_of_the_claim(admin_url):
    with httpx.Client(trust_env=False) as browser:
        back = sign_in_at_provider(browser, admin_url, "olga")
        state = browser.cookies["pushgrid_oidc"]
        done = browser.get(back.headers["location"])
        assert done.status_code == 303, done.text
        assert done.headers["location"] == "/console/"
        me = browser.get(f"{admin_url}{API}/me").json()
        assert (me["name"], me["role"]) == ("olga", "operator")
        assert_problem(browser.post(f"{admin_url}{API}/alerts/acknowledgements", json={}), 403)
        assert "pushgrid_oidc" not in browser.cookies
        # the same answer again, even with the state cookie back: the flow was single use
        browser.cookies.set("pushgrid_oidc", state, domain="127.0.0.1", path=f"{API}/auth/oidc")
        again = browser.get(back.headers["location"])
        assert again.headers["location"] == "/console/?sign_in_error=unknown_state"
    with httpx.Client(trust_env=False) as browser:
        back = sign_in_at_provider(browser, admin_url, "ada")
        browser.get(back.headers["location"])
        assert browser.get(f"{admin_url}{API}/me").json()["role"] == "admin"  # the highest
        audit = browser.get(f"{admin_url}{API}/audit", params={"action": "auth.oidc"}).json()
    entries = [(e["actor"], e["outcome"]) for e in audit["items"]]
    assert entries == [("ada", "succeeded"), (None, "denied"), ("olga", "succeeded")]
    assert "signed in as admin (sub ada" in audit["items"][0]["detail"]


def test_a_user_whose_claim_maps_to_no_role_is_refused(admin_url):
    with httpx.Client(trust_env=False) as browser:
        back = sign_in_at_provider(browser, admin_url, "eve")
        done = browser.get(back.headers["location"])
        assert done.headers["location"] == "/console/?sign_in_error=no_role"
        assert "pushgrid_session" not in browser.cookies
        assert_problem(browser.get(f"{admin_url}{API}/me"), 401)


def test_an_answer_for_another_browser_is_refused(admin_url):
    with httpx.Client(trust_env=False) as victim, httpx.Client(trust_env=False) as attacker:
        back = sign_in_at_provider(attacker, admin_url, "ada")
        # the attacker makes the victim's browser follow the attacker's callback (login CSRF)
        done = victim.get(back.headers["location"])
        assert done.headers["location"] == "/console/?sign_in_error=state_mismatch"
        assert_problem(victim.get(f"{admin_url}{API}/me"), 401)


def test_sign_in_methods_name_the_provider(admin_url):
    methods = httpx.get(f"{admin_url}{API}/auth/methods", trust_env=False).json()
    assert methods == {
        "password": True,
        "oidc": True,
        "oidc_name": "SSO",
        "oidc_start": f"{API}/auth/oidc/start",
    }
