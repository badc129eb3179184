"""Who may subscribe and publish to which subject.

``none`` allows everything. ``jwt`` reads the token's ``permissions`` claim: lists ``sub``,
``pub`` and ``all`` of subject patterns, where a segment ``*`` matches any one segment and a last
segment ``*`` also matches any deeper path (``/Stocks/*`` covers ``/Stocks/NYSE/IBM``).
Tokens are HMAC (EntitlementJwtSecret) or RSA/EC (EntitlementJwtPublicKeyFile) signed; a
token's ``exp`` is kept in the grant so an open connection is closed (4006) when it passes
without a ``token`` refresh. ``custom:NAME`` (server/core/custom_entitlement.py) asks a
plug-in per subject.

Sessions ask an :class:`Entitlement` through its async ``subscribe_denials`` /
``publish_denial``: the built-in modes answer from the grant's patterns at once, a plug-in may
take its time (bounded by a timeout).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

import jwt

from pushgrid.protocol.frames import CLIENT_ID_MAX_LENGTH
from pushgrid.protocol.subjects import ANY_SUBJECT, pattern_matches

# The meta-subjects whose messages name other subjects (docs/occupancy.md): an event about a
# subject may reach only a token that may subscribe to that subject (issue 34).
PRESENCE_SUBJECT = "/pushgrid/presence"  # join/leave of the Occupancy.PresencePatterns subjects
OCCUPANCY_SUBJECT = "/pushgrid/occupancy"  # occupied/vacated of any subject


@dataclass(frozen=True, slots=True)
class Grant:
    """What one token allows. ``None`` token means anonymous."""

    subscribe: tuple[str, ...]
    publish: tuple[str, ...]
    valid: bool = True
    reason: str = ""
    expires: float | None = None  # the token's exp (Unix seconds); None: does not expire
    token: str | None = None  # kept only for plug-ins (custom:NAME), which decide per subject
    # the client id presence lists. None: the mode identifies nobody, so the client's declared
    # id is listed; with JWT the token's ``sub`` ("" without one: a declaration is not a proof)
    client: str | None = None


ALLOW_ALL = Grant(subscribe=("*",), publish=("*",))


def matches(pattern: str, subject: str) -> bool:
    """The server's one pattern syntax (pushgrid/protocol/subjects.py)."""
    return pattern_matches(pattern, subject)


def allowed(patterns: tuple[str, ...], subject: str) -> bool:
    return any(matches(pattern, subject) for pattern in patterns)


def subscribe_denial(grant: Grant, subject: str) -> str | None:
    if not grant.valid:
        return grant.reason
    if not allowed(grant.subscribe, subject):
        return "not entitled to subscribe to this subject"
    return None


def publish_denial(grant: Grant, subject: str) -> str | None:
    if not grant.valid:
        return grant.reason
    if not allowed(grant.publish, subject):
        return "not entitled to publish on this subject"
    return None


def covers(grant: str, pattern: str) -> bool:
    """Does ``grant`` match every subject ``pattern`` matches? Exactly when it matches the
    pattern read as a subject whose ``*`` segments are literal: a grant's ``*`` covers a
    pattern's ``*``, a literal segment never does, and a grant's last ``*`` covers any depth."""
    return pattern_matches(grant, "/*" if pattern == ANY_SUBJECT else pattern)


def events_denial(grant: Grant, subject: str, presence_patterns: Sequence[str]) -> str | None:
    """Why ``grant`` may not follow an event meta-subject (None: it may, or ``subject`` is
    none of them). Its events name the subjects they are about, so the token must be entitled
    to every subject an event can be about: the ``Occupancy.PresencePatterns`` for
    ``/pushgrid/presence``, every subject for ``/pushgrid/occupancy``. Coarse but exact: an
    event never reaches a token that could not subscribe to its subject."""
    if subject == PRESENCE_SUBJECT:
        needed: Sequence[str] = presence_patterns
    elif subject == OCCUPANCY_SUBJECT:
        needed = (ANY_SUBJECT,)
    else:
        return None
    for pattern in needed:
        if not any(covers(mine, pattern) for mine in grant.subscribe):
            return f"its events name subjects of {pattern}, which this token may not subscribe to"
    return None


class Entitlement(abc.ABC):
    @abc.abstractmethod
    def grant(self, token: str | None) -> Grant:
        """Decode a token into what it allows (called once per connection or token update)."""

    async def subscribe_denials(
        self, grant: Grant, remote: str, subjects: Sequence[str]
    ) -> list[str | None]:
        """Why each subject may not be subscribed to (None: allowed), in order."""
        return [subscribe_denial(grant, subject) for subject in subjects]

    async def publish_denial(self, grant: Grant, remote: str, subject: str) -> str | None:
        """Why ``subject`` may not be published on (None: allowed)."""
        return publish_denial(grant, subject)


class AllowAll(Entitlement):
    def grant(self, token: str | None) -> Grant:
        return ALLOW_ALL


class JwtEntitlement(Entitlement):
    def __init__(self, key: str, algorithms: list[str], require_exp: bool = False) -> None:
        self._key = key
        self._algorithms = algorithms
        # EntitlementJwtRequireExp: a token without exp would be good forever.
        self._options: jwt.types.Options = {"require": ["exp"] if require_exp else []}

    def grant(self, token: str | None) -> Grant:
        if not token:
            return Grant((), (), valid=False, reason="no token")
        try:
            claims = jwt.decode(
                token, self._key, algorithms=self._algorithms, options=self._options
            )
        except jwt.ExpiredSignatureError:
            return Grant((), (), valid=False, reason="token expired")
        except jwt.MissingRequiredClaimError:
            return _invalid("the token has no 'exp' claim (EntitlementJwtRequireExp)")
        except jwt.InvalidTokenError as exc:
            return Grant((), (), valid=False, reason=f"invalid token: {exc}")
        permissions = claims.get("permissions", {})
        if not isinstance(permissions, dict):
            return _invalid("the 'permissions' claim must be an object")
        lists = {}
        for key in ("all", "sub", "pub"):
            patterns = _patterns(permissions.get(key, []))
            if patterns is None:
                return _invalid(f"permissions.{key} must be a list of subject patterns")
            lists[key] = patterns
        expires = claims.get("exp")
        subject = claims.get("sub")
        return Grant(
            subscribe=lists["all"] + lists["sub"],
            publish=lists["all"] + lists["pub"],
            expires=float(expires) if isinstance(expires, int | float) else None,
            client=_client_id(subject),
        )


def _client_id(subject: object) -> str:
    """The token's ``sub`` as a client id: the first 64 characters of a string; "" without a
    string ``sub`` (the session is listed without an id, whatever the client declares)."""
    if not isinstance(subject, str):
        return ""
    return subject[:CLIENT_ID_MAX_LENGTH]


def _invalid(reason: str) -> Grant:
    return Grant((), (), valid=False, reason=f"invalid token: {reason}")


def _patterns(value: object) -> tuple[str, ...] | None:
    """A list of strings as a tuple; None for anything else (a bare string is not a list)."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)
