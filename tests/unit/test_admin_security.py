"""Admin API tokens and roles (pure functions)."""

from __future__ import annotations

import hashlib

import pytest

from pushgrid.admin_api.security import (
    TOKEN_PREFIX,
    Role,
    display_prefix,
    hash_token,
    looks_like_token,
    new_token,
    new_token_id,
    same_hash,
)


def test_tokens_are_random_prefixed_and_long() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for token in tokens:
        assert token.startswith(TOKEN_PREFIX)
        assert len(token) == len(TOKEN_PREFIX) + 43  # 32 random bytes, URL-safe base64
        assert looks_like_token(token)
        assert token.isascii()


def test_token_ids_are_random_hex() -> None:
    ids = {new_token_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)


def test_hash_is_the_hex_sha256_of_the_token() -> None:
    assert hash_token("pgt_abc") == hashlib.sha256(b"pgt_abc").hexdigest()
    assert hash_token("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    token = new_token()
    assert hash_token(token) == hash_token(token)
    assert hash_token(token) != hash_token(token + "x")
    assert len(hash_token(token)) == 64
    assert token not in hash_token(token)
    assert same_hash(hash_token(token), hash_token(token))
    assert not same_hash(hash_token(token), hash_token("other"))


def test_display_prefix_identifies_without_revealing() -> None:
    token = new_token()
    assert display_prefix(token) == token[:12]
    assert len(display_prefix(token)) < len(token) // 3


@pytest.mark.parametrize(
    "value", ["", "pgt_", "Bearer pgt_x", "pgt_short", "xyz_" + "a" * 43, "pgt_" + "é" * 20]
)
def test_values_that_are_not_tokens(value: str) -> None:
    assert not looks_like_token(value)


# The role matrix: granted role (rows) x required role (columns).
MATRIX = {
    Role.VIEWER: {Role.VIEWER: True, Role.OPERATOR: False, Role.ADMIN: False},
    Role.OPERATOR: {Role.VIEWER: True, Role.OPERATOR: True, Role.ADMIN: False},
    Role.ADMIN: {Role.VIEWER: True, Role.OPERATOR: True, Role.ADMIN: True},
}


@pytest.mark.parametrize("granted", list(Role))
@pytest.mark.parametrize("required", list(Role))
def test_role_matrix(granted: Role, required: Role) -> None:
    assert granted.allows(required) is MATRIX[granted][required]


def test_roles_are_ordered_and_named_as_in_sql() -> None:
    assert [role.value for role in sorted(Role, key=lambda r: r.rank)] == [
        "viewer",
        "operator",
        "admin",
    ]
    assert Role("operator") is Role.OPERATOR
