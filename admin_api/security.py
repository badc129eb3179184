"""Roles and API tokens (pure functions: no database, no web framework).

A token is ``pgt_`` followed by 43 URL-safe characters (32 random bytes). The database keeps only
its hex SHA-256 (``token_hash``) and its first characters (``prefix``, to tell tokens apart in a
list); a token is looked up by its hash. SHA-256 without salt or stretching is right for tokens
(unlike passwords): they are 256-bit random values, so the hash cannot be brute-forced.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Final

# the roles are part of the admin API's answers (GET /me), which the console reads too
from pushgrid.ops.api.me import Role as Role

TOKEN_PREFIX: Final = "pgt_"
TOKEN_BYTES: Final = 32
DISPLAY_PREFIX_LENGTH: Final = 12  # "pgt_" + 8 characters


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: the token it authenticated with, or its browser's sign-in session (then
    ``token_id`` is the session's public id and ``via`` how it signed in: ADR 052)."""

    token_id: str
    name: str
    role: Role
    via: str = "token"  # token | password | oidc

    @property
    def by_cookie(self) -> bool:
        return self.via != "token"


def new_token() -> str:
    """A fresh random API token."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def new_token_id() -> str:
    """The public id of a token (not guessable, so ids in URLs reveal nothing)."""
    return secrets.token_hex(8)


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token: what the database stores."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def display_prefix(token: str) -> str:
    return token[:DISPLAY_PREFIX_LENGTH]


def looks_like_token(value: str) -> bool:
    """A cheap syntactic check before any database lookup."""
    return value.startswith(TOKEN_PREFIX) and 16 <= len(value) <= 256 and value.isascii()


def same_hash(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def throttle_key(address: str, token: str) -> str:
    """What failed sign-ins are counted by: the caller's address and the token's display prefix
    (its first 12 characters). A guesser's failures never block another token, not even from
    the same address (every console user comes from the admin API's own address)."""
    return f"{address} {display_prefix(token)}"
