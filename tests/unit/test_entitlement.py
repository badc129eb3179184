"""Entitlement: subject patterns and JWT grants (HS256 tokens made with PyJWT)."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from pushgrid.server.core.entitlement import (
    ALLOW_ALL,
    AllowAll,
    Grant,
    JwtEntitlement,
    allowed,
    matches,
)

SECRET = "test-secret-" + "0123456789" * 6  # 72 bytes: no PyJWT key-length warning


@pytest.mark.parametrize(
    ("pattern", "subject"),
    [
        ("*", "/Stocks/NYSE/IBM"),
        ("*", "/a/b"),
        ("/Stocks/NYSE/IBM", "/Stocks/NYSE/IBM"),
        ("/Stocks/*/IBM", "/Stocks/NYSE/IBM"),
        ("/Stocks/*/IBM", "/Stocks/NASDAQ/IBM"),
        ("/*/NYSE/IBM", "/Stocks/NYSE/IBM"),
        ("/*/*/*", "/Stocks/NYSE/IBM"),
        ("/Stocks/*", "/Stocks/NYSE"),
        ("/Stocks/*", "/Stocks/NYSE/IBM"),
        ("/Stocks/*", "/Stocks/NYSE/IBM/BID/level/2"),
        ("/Stocks/NYSE/*", "/Stocks/NYSE/IBM"),
        ("/*", "/a/b"),
        ("/*", "/a/b/c/d"),
        ("/*/*", "/a/b/c"),
        ("/Börse/*", "/Börse/ÄÖÜ/日本"),
        ("/Stocks/*/IBM/*", "/Stocks/NYSE/IBM/BID/1"),
    ],
)
def test_pattern_matches(pattern: str, subject: str) -> None:
    assert matches(pattern, subject)


@pytest.mark.parametrize(
    ("pattern", "subject"),
    [
        ("/Stocks/NYSE/IBM", "/Stocks/NYSE/MSFT"),
        ("/Stocks/NYSE/IBM", "/Stocks/NYSE/IBM/BID"),  # exact: not deeper
        ("/Stocks/NYSE/IBM", "/Stocks/NYSE"),  # exact: not shallower
        ("/Stocks/NYSE/IBM", "/Stocks/NYSE/IBMX"),
        ("/Stocks/NYSE/IBM", "/stocks/nyse/ibm"),  # case-sensitive
        ("/Stocks/*/IBM", "/Stocks/NYSE/MSFT"),
        ("/Stocks/*/IBM", "/Stocks/NYSE/IBM/BID"),  # an inner * is one segment only
        ("/Stocks/*/IBM", "/Stocks/IBM"),
        ("/Stocks/*/IBM", "/Stocks/A/B/IBM"),
        ("/*/NYSE/IBM", "/Stocks/NASDAQ/IBM"),
        ("/Stocks/*", "/Bonds/NYSE/IBM"),
        ("/Stocks/*", "/StocksX/NYSE"),
        ("/Stocks/NYSE/*", "/Stocks/NASDAQ/IBM"),
        ("/Stocks/NYSE/*", "/Stocks/NYSE"),  # * needs a segment to match
        ("/*/*/*", "/a/b"),
        ("/Stocks/NY*", "/Stocks/NYSE"),  # * only as a whole segment
        ("/Stocks/NY*", "/Stocks/NYSE/IBM"),
        ("/Sto*/NYSE", "/Stocks/NYSE"),
    ],
)
def test_pattern_does_not_match(pattern: str, subject: str) -> None:
    assert not matches(pattern, subject)


def test_allowed_needs_any_pattern() -> None:
    patterns = ("/Stocks/NYSE/*", "/Bonds/US/10Y")
    assert allowed(patterns, "/Stocks/NYSE/IBM")
    assert allowed(patterns, "/Bonds/US/10Y")
    assert not allowed(patterns, "/Bonds/US/30Y")
    assert not allowed((), "/Stocks/NYSE/IBM")


def test_allow_all() -> None:
    for token in (None, "", "garbage"):
        grant = AllowAll().grant(token)
        assert grant is ALLOW_ALL
        assert grant.valid
        assert allowed(grant.subscribe, "/any/subject/at/all")
        assert allowed(grant.publish, "/any/subject")


# --- JWT --------------------------------------------------------------------------------------


def _token(claims: dict[str, Any], key: str = SECRET, algorithm: str = "HS256") -> str:
    return jwt.encode(claims, key, algorithm=algorithm)


@pytest.fixture
def entitlement() -> JwtEntitlement:
    return JwtEntitlement(SECRET, ["HS256"])


def test_jwt_sub_pub_all(entitlement: JwtEntitlement) -> None:
    token = _token(
        {
            "sub": "user-1",
            "exp": int(time.time()) + 3600,
            "permissions": {
                "sub": ["/Stocks/*"],
                "pub": ["/Orders/user-1/*"],
                "all": ["/Chat/room-1"],
            },
        }
    )
    grant = entitlement.grant(token)
    assert grant.valid
    assert grant.reason == ""
    # sub only
    assert allowed(grant.subscribe, "/Stocks/NYSE/IBM")
    assert not allowed(grant.publish, "/Stocks/NYSE/IBM")
    # pub only
    assert allowed(grant.publish, "/Orders/user-1/42")
    assert not allowed(grant.subscribe, "/Orders/user-1/42")
    assert not allowed(grant.publish, "/Orders/user-2/42")
    # all = both
    assert allowed(grant.subscribe, "/Chat/room-1")
    assert allowed(grant.publish, "/Chat/room-1")
    assert not allowed(grant.subscribe, "/Chat/room-2")
    assert set(grant.subscribe) == {"/Stocks/*", "/Chat/room-1"}
    assert set(grant.publish) == {"/Orders/user-1/*", "/Chat/room-1"}


def test_jwt_without_permissions_grants_nothing(entitlement: JwtEntitlement) -> None:
    grant = entitlement.grant(_token({"sub": "user-1"}))
    assert grant.valid
    assert grant.subscribe == ()
    assert grant.publish == ()
    assert not allowed(grant.subscribe, "/a/b")


def test_jwt_with_partial_permissions(entitlement: JwtEntitlement) -> None:
    grant = entitlement.grant(_token({"permissions": {"sub": ["*"]}}))
    assert grant.valid
    assert allowed(grant.subscribe, "/x/y")
    assert grant.publish == ()


def test_expired_token(entitlement: JwtEntitlement) -> None:
    token = _token({"exp": int(time.time()) - 60, "permissions": {"all": ["*"]}})
    grant = entitlement.grant(token)
    assert not grant.valid
    assert "expired" in grant.reason
    assert grant.subscribe == ()
    assert grant.publish == ()


def test_not_yet_valid_token(entitlement: JwtEntitlement) -> None:
    token = _token({"nbf": int(time.time()) + 3600, "permissions": {"all": ["*"]}})
    grant = entitlement.grant(token)
    assert not grant.valid
    assert grant.subscribe == ()
    assert grant.publish == ()


def test_bad_signature(entitlement: JwtEntitlement) -> None:
    token = _token({"permissions": {"all": ["*"]}}, key="another-secret-" + "0123456789" * 6)
    grant = entitlement.grant(token)
    assert not grant.valid
    assert grant.reason.startswith("invalid token")
    assert grant.subscribe == ()
    assert grant.publish == ()


def test_tampered_payload(entitlement: JwtEntitlement) -> None:
    header, _, signature = _token({"permissions": {"sub": ["/a/b"]}}).split(".")
    forged_payload = jwt.utils.base64url_encode(b'{"permissions":{"all":["*"]}}').decode()
    grant = entitlement.grant(f"{header}.{forged_payload}.{signature}")
    assert not grant.valid
    assert grant.publish == ()


def test_unsigned_token_is_rejected(entitlement: JwtEntitlement) -> None:
    token = jwt.encode({"permissions": {"all": ["*"]}}, "", algorithm="none")
    grant = entitlement.grant(token)
    assert not grant.valid
    assert grant.subscribe == ()


def test_algorithm_not_allowed(entitlement: JwtEntitlement) -> None:
    token = _token({"permissions": {"all": ["*"]}}, algorithm="HS512")
    assert not entitlement.grant(token).valid
    assert JwtEntitlement(SECRET, ["HS256", "HS512"]).grant(token).valid


@pytest.mark.parametrize("token", [None, ""])
def test_missing_token(entitlement: JwtEntitlement, token: str | None) -> None:
    grant = entitlement.grant(token)
    assert not grant.valid
    assert grant.reason == "no token"
    assert grant.subscribe == ()
    assert grant.publish == ()


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "a.b", "...."])
def test_malformed_token(entitlement: JwtEntitlement, token: str) -> None:
    grant = entitlement.grant(token)
    assert not grant.valid
    assert grant.reason.startswith("invalid token")


def test_grant_is_a_value() -> None:
    assert Grant(("a",), ("b",)) == Grant(("a",), ("b",))
    assert Grant((), ()).valid


# --- malformed permission claims must never widen access -------------------------------------


@pytest.mark.parametrize("kind", ["sub", "pub", "all"])
def test_permission_given_as_a_string_does_not_grant_every_subject(
    entitlement: JwtEntitlement, kind: str
) -> None:
    # A single pattern instead of a list. Splitting the string into characters would turn
    # "/Stocks/*" into the patterns "/", "S", ..., "*" -- and "*" allows every subject.
    token = _token({"permissions": {kind: "/Stocks/*"}})
    grant = entitlement.grant(token)
    assert not allowed(grant.subscribe, "/Secret/admin/keys")
    assert not allowed(grant.publish, "/Secret/admin/keys")


@pytest.mark.parametrize(
    "permissions", [["/a/*"], "/a/*", 42, True], ids=["list", "string", "number", "bool"]
)
def test_permissions_claim_of_the_wrong_type_is_handled(
    entitlement: JwtEntitlement, permissions: Any
) -> None:
    # No exception out of grant(): the connection gets a (restrictive) grant.
    grant = entitlement.grant(_token({"permissions": permissions}))
    assert isinstance(grant, Grant)
    assert not allowed(grant.subscribe, "/b/c")
    assert not allowed(grant.publish, "/b/c")
