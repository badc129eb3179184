"""The pure parts of console sign-in (ADR 052): password hashing and rules, lockout, CSRF, the
role of an OpenID Connect claim, and the sign-in settings' errors naming their key."""

from __future__ import annotations

from pathlib import Path

import pytest
from argon2 import PasswordHasher

from pushgrid.admin_api.csrf import csrf_problem
from pushgrid.admin_api.lockout import FailureCount, LockoutPolicy, LockoutTable, after_failure
from pushgrid.admin_api.oidc import OidcError, name_of, role_of
from pushgrid.admin_api.passwords import (
    MAX_LENGTH,
    check_rules,
    hash_password,
    needs_rehash,
    verify_password,
)
from pushgrid.admin_api.problems import ProblemError
from pushgrid.admin_api.security import Role
from pushgrid.config import ConfigError, load_settings

POLICY = LockoutPolicy(max_failures=3, window=60.0, lockout=100.0)

# --- passwords ----------------------------------------------------------------------------------


def test_hashes_are_argon2id_salted_and_verify_only_the_password() -> None:
    first, second = hash_password("a good long password"), hash_password("a good long password")
    assert first.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert first != second  # a salt each
    assert verify_password(first, "a good long password")
    assert not verify_password(first, "a good long passwore")
    assert not verify_password(None, "a good long password")  # no such user
    assert not verify_password("not a hash", "a good long password")
    assert not verify_password(first, "x" * (MAX_LENGTH + 1))


def test_a_hash_with_other_parameters_is_rehashed() -> None:
    old = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1).hash("a good long password")
    assert verify_password(old, "a good long password")
    assert needs_rehash(old)
    assert not needs_rehash(hash_password("a good long password"))


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("short", "at least 12"),
        (" " * 20, "blank"),
        ("Alice-Admin-1", "the user's name"),
        ("y" * (MAX_LENGTH + 1), "at most"),
    ],
)
def test_password_rules(password: str, why: str) -> None:
    with pytest.raises(ProblemError) as info:
        check_rules(password, "alice-admin-1")
    assert (info.value.status, info.value.code) == (422, "weak_password")
    assert why in info.value.detail
    check_rules("a good long password", "alice")


# --- lockout ------------------------------------------------------------------------------------


def test_the_maximum_of_failures_within_the_window_locks() -> None:
    state = FailureCount()
    for now in (0.0, 10.0):
        state = after_failure(state, now, POLICY)
        assert state.locked_for(now) == 0
    state = after_failure(state, 20.0, POLICY)
    assert state.count == 3
    assert state.locked_for(20.0) == 100.0
    assert state.locked_for(119.0) == 1.0
    assert state.locked_for(120.0) == 0.0  # over: the next failure starts a new count
    assert after_failure(state, 121.0, POLICY) == FailureCount(1, 121.0, None)


def test_failures_spread_wider_than_the_window_never_lock() -> None:
    state = FailureCount()
    for now in range(0, 1000, 61):
        state = after_failure(state, float(now), POLICY)
        assert state.locked_for(float(now)) == 0
        assert state.count == 1


def test_the_lockout_table_counts_per_key_and_forgets_the_oldest() -> None:
    table = LockoutTable(POLICY)
    for _ in range(3):
        table.failed("10.0.0.1", 5.0)
    assert table.locked_for("10.0.0.1", 5.0) == 100.0
    assert table.locked_for("10.0.0.2", 5.0) == 0.0
    table.failed("10.0.0.2", 5.0)
    table.succeeded("10.0.0.2")
    assert len(table._counts) == 1
    for n in range(10_050):
        table.failed(f"k{n}", 6.0)
    assert len(table._counts) == 10_000
    assert table.locked_for("10.0.0.1", 6.0) == 0.0  # the oldest went first


# --- CSRF ---------------------------------------------------------------------------------------


def test_csrf_is_asked_of_state_changing_methods_only() -> None:
    for method in ("GET", "HEAD", "OPTIONS"):
        assert csrf_problem(method, "expected", None) is None
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        missing = csrf_problem(method, "expected", None)
        assert missing is not None
        assert "X-CSRF-Token" in missing
        assert csrf_problem(method, "expected", "") is not None
        assert "does not match" in (csrf_problem(method, "expected", "other") or "")
        assert csrf_problem(method, "expected", "expected") is None


# --- OpenID Connect claims ----------------------------------------------------------------------

ROLES = {"push-ops": "operator", "push-admins": "admin", "staff": "viewer"}


def test_the_highest_mapped_role_of_the_claim_wins() -> None:
    assert role_of({"groups": ["staff", "push-admins", "push-ops"]}, "groups", ROLES) is Role.ADMIN
    assert role_of({"groups": "push-ops"}, "groups", ROLES) is Role.OPERATOR
    assert role_of({"groups": ["other", 7, None]}, "groups", ROLES) is None
    assert role_of({}, "groups", ROLES) is None


def test_the_name_falls_back_to_email_then_subject() -> None:
    assert name_of({"preferred_username": "olga", "sub": "1"}, "preferred_username") == "olga"
    assert name_of({"email": "o@example.org", "sub": "1"}, "preferred_username") == "o@example.org"
    assert name_of({"preferred_username": " ", "sub": "s-1"}, "preferred_username") == "s-1"
    with pytest.raises(OidcError) as info:
        name_of({}, "preferred_username")
    assert (info.value.status, info.value.code) == (401, "no_subject")
    assert OidcError("no_role", "x").status == 403


# --- settings -----------------------------------------------------------------------------------


def _error(**settings: object) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(None, environ={}, **settings)
    return str(info.value)


def test_sign_in_settings_errors_name_their_key(tmp_path: Path) -> None:
    assert "OIDC.Issuer" in _error(oidc_issuer="http://idp.example.org", oidc_client_id="c")
    assert "OIDC.ClientId" in _error(oidc_issuer="https://idp.example.org")
    assert "OIDC.RoleMap" in _error(
        oidc_issuer="https://idp.example.org", oidc_client_id="c", oidc_role_map=["ops=root"]
    )
    assert "OIDC.Scopes" in _error(oidc_scopes=["profile"])
    assert "SignIn.MaxFailures" in _error(signin_max_failures=0)
    conf = tmp_path / "pushgrid.conf"
    conf.write_text("OIDC.RoleClaim = \nSignIn.SecureCookies = sometimes\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(conf, environ={})
    text = str(info.value)
    assert "OIDC.RoleClaim" in text
    assert "SignIn.SecureCookies" in text


def test_sign_in_settings_defaults_and_a_loopback_provider() -> None:
    settings = load_settings(None, environ={}).signin
    assert (settings.signin_max_failures, settings.signin_address_max_failures) == (5, 20)
    assert (settings.signin_failure_window, settings.signin_lockout_seconds) == (900, 900)
    assert settings.oidc_enabled is False
    local = load_settings(
        None, environ={}, oidc_issuer="http://127.0.0.1:9999/", oidc_client_id="console"
    ).signin
    assert local.oidc_issuer == "http://127.0.0.1:9999"
    assert local.oidc_roles() == {"viewer": "viewer", "operator": "operator", "admin": "admin"}
