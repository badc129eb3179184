"""API tokens: create (the token is returned once), list, revoke, authenticate."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import ApiToken
from pushgrid.metrics.sqlstore.models import utc_now

from ..problems import not_found
from ..schemas import TokenCreated, TokenOut
from ..security import (
    Principal,
    Role,
    display_prefix,
    hash_token,
    looks_like_token,
    new_token,
    new_token_id,
)
from .audit import CliAudit

# last_used_at is written at most once a minute per token (not on every request).
LAST_USED_RESOLUTION: Final = timedelta(seconds=60)


def token_out(token: ApiToken) -> TokenOut:
    return TokenOut(
        id=token.id,
        name=token.name,
        role=Role(token.role),
        prefix=token.prefix,
        created_at=token.created_at,
        created_by=token.created_by,
        last_used_at=token.last_used_at,
        revoked=token.revoked,
        revoked_at=token.revoked_at,
        expires_at=token.expires_at,
        expired=token.expires_at is not None and token.expires_at <= utc_now(),
    )


class TokenService:
    def __init__(self, db: Session) -> None:
        self.db = db

    def create(
        self,
        name: str,
        role: Role,
        created_by: str | None = None,
        expires_in: float | None = None,
        audit: CliAudit | None = None,
    ) -> TokenCreated:
        """Store a new token's hash; return its description with the token itself.
        ``expires_in``: seconds until it stops authenticating (None: never). ``audit``: a
        creation outside the API (the CLI), recorded in the audit log in the same transaction
        (the API's own creations are recorded by its audit middleware)."""
        token = new_token()
        row = ApiToken(
            id=new_token_id(),
            name=name,
            role=role.value,
            token_hash=hash_token(token),
            prefix=display_prefix(token),
            created_at=utc_now(),
            created_by=created_by,
            expires_at=None if expires_in is None else utc_now() + timedelta(seconds=expires_in),
        )
        with transaction(self.db):
            self.db.add(row)
            if audit is not None:
                self.db.add(audit.entry(row.id, f"name={row.name} role={row.role}"))
        return TokenCreated(**token_out(row).model_dump(), token=token)

    def list(self) -> list[TokenOut]:
        rows = self.db.scalars(select(ApiToken).order_by(ApiToken.created_at, ApiToken.id))
        return [token_out(row) for row in rows]

    def revoke(self, token_id: str) -> TokenOut:
        """Revoke a token (revoking a revoked token changes nothing)."""
        row = self.db.get(ApiToken, token_id)
        if row is None:
            raise not_found(f"no token {token_id!r}")
        if row.revoked_at is None:
            with transaction(self.db):
                row.revoked_at = utc_now()
        return token_out(row)

    def authenticate(self, token: str) -> Principal | None:
        """The principal of a valid, unrevoked token, or None."""
        if not looks_like_token(token):
            return None
        row = self.db.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
        if row is None or row.revoked_at is not None:
            return None
        now = utc_now()
        if row.expires_at is not None and row.expires_at <= now:
            return None
        if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
            with transaction(self.db):
                row.last_used_at = now
        return Principal(token_id=row.id, name=row.name, role=Role(row.role))

    def prefix_known(self, prefix: str) -> bool:
        """Does an active (unrevoked, unexpired) token start with ``prefix``? Failed sign-ins
        with a prefix no token has count per address (deps.py): a guesser changing the prefix
        each time is throttled, a valid token's prefix is not."""
        row = self.db.scalar(
            select(ApiToken.id)
            .where(
                ApiToken.prefix == prefix,
                ApiToken.revoked_at.is_(None),
                or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > utc_now()),
            )
            .limit(1)
        )
        return row is not None

    def has_active(self, role: Role) -> bool:
        row = self.db.scalar(
            select(ApiToken.id)
            .where(
                ApiToken.role == role.value,
                ApiToken.revoked_at.is_(None),
                or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > utc_now()),
            )
            .limit(1)
        )
        return row is not None
