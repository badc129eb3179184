"""Console sign-in with a user name and password in real headless Chromium (issue 35 item 5,
ADR 052): an unauthenticated visit lands on the sign-in page; a wrong password is refused with
the admin API's words; the right one shows the console with the user and role; an action goes
through the session cookie and its CSRF token; the session survives a new tab's empty storage;
sign-out ends it. Over the stack of test_console_browser.py (one server, the admin API with the
console under uvicorn). Screenshots: ``$PUSHGRID_SHOTS`` (default: a temporary directory).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from pushgrid.admin_api.security import Role
from pushgrid.admin_api.services.users import UserService
from pushgrid.metrics.sqlstore import session_scope

from .pgtest import DEFAULT_TIMEOUT, ServerProcess
from .test_console_browser import Console, Stack, admin_console
from .test_console_browser import pytestmark as browser_only

pytestmark = browser_only
PASSWORD = "a long enough password"


@pytest.fixture(scope="module")
def stack(
    module_server_factory: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    server = module_server_factory(ServerName="signin-1")
    with admin_console([server], tmp_path_factory.mktemp("signin")) as (built, _server):
        with session_scope(built.db_url) as db:
            UserService(db).create("olivia", Role.OPERATOR, PASSWORD)
            UserService(db).create("ada", Role.ADMIN, PASSWORD)
        yield built


@pytest.fixture(scope="module")
def console(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    shots = Path(os.environ.get("PUSHGRID_SHOTS") or tmp_path_factory.mktemp("shots"))
    page = Console(stack, shots)
    yield page
    page.close()


def type_into(console: Console, selector: str, text: str) -> None:
    field = console.br.wait_for_element(selector)
    console.br.clear_input(field)
    field.send_keys(text)


def sign_in_with_password(console: Console, user: str, password: str) -> None:
    type_into(console, "#login-user", user)
    type_into(console, "#login-password", password)
    console.br.find_element("#login-password-button").click()


def audit(stack: Stack, action: str) -> list[dict[str, object]]:
    answer = stack.api("GET", "/audit", params={"action": action, "limit": 100})
    assert answer.status_code == 200, answer.text
    items: list[dict[str, object]] = answer.json()["items"]
    return items


@pytest.mark.timeout(300)
def test_password_sign_in_shows_the_console_and_sign_out_ends_it(
    console: Console, stack: Stack
) -> None:
    console.open()  # no token, no cookie: the sign-in page
    console.br.wait_for_element("#login-password-button")
    assert not console.js("return !!document.getElementById('nav-group-live')")
    console.screenshot("signin-page")

    sign_in_with_password(console, "olivia", "not the password")
    refused = console.wait_text("#login-alert", "wrong user name or password")
    assert refused.startswith("sign-in refused")
    # the browser logs the refused request itself (a 401 of /auth/login), and nothing else
    logged = [e["message"] for e in console.errors()]
    assert len(logged) == 1, logged
    assert "/api/v1/auth/login" in logged[0]
    assert "401" in logged[0]

    sign_in_with_password(console, "olivia", PASSWORD)
    assert console.wait_text("#user", "olivia") == "olivia · operator"
    # the session's secret is HttpOnly: the page's scripts see only the CSRF token
    cookies = console.js("return document.cookie")
    assert "pushgrid_csrf=" in cookies
    assert "pushgrid_session" not in cookies
    assert console.js("return window.sessionStorage.getItem('token')") == '"session"'
    console.screenshot("signin-signed-in")

    # an operator's action goes through the session cookie and the CSRF token Dash sends
    console.goto("watched", "#watched-add")
    type_into(console, "#watched-pattern", "/signin/*")
    console.br.find_element("#watched-add").click()
    console.wait_text("#watched-result", "/signin/*: watched on signin-1")
    added = audit(stack, "watched.add")
    assert [(e["actor"], e["status"]) for e in added][:1] == [("olivia", 201)], added

    # a new tab has no token in its storage: the cookie still signs it in
    console.js("window.sessionStorage.clear()")
    console.open()
    assert console.wait_text("#user", "olivia") == "olivia · operator"

    console.br.find_element("#sign-out").click()
    console.br.wait_for_element("#login-password-button")
    assert "pushgrid_csrf" not in console.js("return document.cookie")
    console.open()  # reloaded: still signed out
    console.br.wait_for_element("#login-password-button")
    logins = audit(stack, "auth.login")
    assert [(e["actor"], e["status"]) for e in logins] == [("olivia", 200), ("olivia", 401)]
    logouts = audit(stack, "auth.logout")
    assert [(e["actor"], e["status"]) for e in logouts] == [("olivia", 204)]
    console.assert_no_errors()


def test_a_refused_single_sign_on_is_explained_on_the_sign_in_page(
    console: Console, stack: Stack
) -> None:
    console.br.server_url = f"{stack.console_url}?sign_in_error=no_role"
    text = console.wait_text("#login-alert", "no pushgrid role")
    assert text.startswith("single sign-on failed")
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        methods = http.get(f"{stack.api_url}/api/v1/auth/methods").json()
    assert methods["oidc"] is False  # not configured here: no SSO button
    assert not console.js("return !!document.getElementById('login-sso')")


@pytest.mark.timeout(300)
def test_an_admin_reads_the_sign_ins_on_the_audit_page(console: Console, stack: Stack) -> None:
    console.open()
    sign_in_with_password(console, "olivia", "wrong password again")
    console.wait_text("#login-alert", "wrong user name or password")
    console.errors()  # the refused request's own log line
    sign_in_with_password(console, "ada", PASSWORD)
    assert console.wait_text("#user", "ada") == "ada · admin"
    console.goto("audit", "#audit-table")
    type_into(console, "#audit-actor", "olivia")
    type_into(console, "#audit-action", "auth.login")

    def rows() -> list[str] | None:
        found: list[str] = console.js(
            "return Array.from(document.querySelectorAll('#audit-table tr[data-action]'))"
            ".map(r => r.dataset.outcome)"
        )
        return found if len(found) == 3 else None

    assert console.wait(rows, "olivia's three sign-ins") == ["denied", "succeeded", "denied"]
    assert console.text("#audit-shown") == "rows 1-3"
    type_into(console, "#audit-to", "2000-01-01 00:00")  # a range before any of them
    assert console.wait_text("#audit-shown", "no rows") == "no rows"
    console.screenshot("signin-audit")
    console.br.find_element("#sign-out").click()
    console.br.wait_for_element("#login-password-button")
    console.assert_no_errors()
