"""Passwords of console users (pure: no database, no web framework).

Hashed with argon2id (argon2-cffi, RFC 9106): memory-hard, so a stolen table costs an attacker
memory as well as time per guess. Parameters: 19 MiB, 2 passes, 1 lane (the OWASP password
storage minimum for argon2id). Measured on this project's 2-core machine under a load average of
12 (5 verifications each): 0.15 s per verification with these, 1.17 s with RFC 9106's 64 MiB /
3 passes, which would make each sign-in take seconds on a busy host and let a handful of wrong
passwords occupy the API's worker threads. Stored as the PHC string
(``$argon2id$v=19$m=19456,t=2,p=1$salt$hash``): parameters travel with each hash, so
raising them later re-hashes a user's password at the next successful sign-in
(:func:`needs_rehash`).
"""

from __future__ import annotations

from typing import Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from .problems import ProblemError

MIN_LENGTH: Final = 12
MAX_LENGTH: Final = 1024  # argon2 takes any length; a bound keeps a request's cost bounded
MEMORY_KIB: Final = 19_456
TIME_COST: Final = 2
PARALLELISM: Final = 1

_HASHER: Final = PasswordHasher(
    time_cost=TIME_COST, memory_cost=MEMORY_KIB, parallelism=PARALLELISM
)
#: verified against when the user does not exist, so that an unknown name costs the same time
#: as a wrong password (no user enumeration by timing)
_DUMMY: Final = _HASHER.hash("pushgrid: no such user")


def _weak(detail: str) -> ProblemError:
    return ProblemError(422, detail, "weak_password")


def check_rules(password: str, user: str | None = None) -> None:
    """Length 12-1024, not blank, not the user's name (else a 422 ``weak_password`` problem,
    which the command line prints as its message)."""
    if len(password) < MIN_LENGTH:
        raise _weak(f"the password must have at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise _weak(f"the password must have at most {MAX_LENGTH} characters")
    if not password.strip():
        raise _weak("the password must not be blank")
    if user is not None and password.strip().lower() == user.strip().lower():
        raise _weak("the password must not be the user's name")


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify_password(stored: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored`` (None: no such user; the time is spent anyway)."""
    if len(password) > MAX_LENGTH:
        return False
    try:
        return _HASHER.verify(stored or _DUMMY, password) and stored is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """The hash was made with other parameters than today's."""
    try:
        return _HASHER.check_needs_rehash(stored)
    except InvalidHashError:
        return True
