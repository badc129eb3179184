"""Sign-in sessions of browsers: opened by a sign-in, found by their cookie, closed by sign-out.

The cookie is 32 random bytes (``token_urlsafe``); the table keeps its SHA-256 only, like API
tokens (admin_api/security.py), so a copy of the database signs nobody in. A session ends
``SignIn.SessionSeconds`` after it was opened whatever happens, or ``SignIn.IdleSeconds`` after
its last request; an ended session is deleted when it is next presented (and by any sign-in).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from sqlalchemy import delete
from sqlalchemy.orm import Session

from pushgrid.config import SignInSettings
from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import SignInSession
from pushgrid.metrics.sqlstore.models import utc_now

from ..security import Principal, Role, hash_token

# last_seen_at is written at most this often per session (not on every request)
SEEN_RESOLUTION: Final = timedelta(seconds=30)
MAX_COOKIE_LENGTH: Final = 128


@dataclass(frozen=True, slots=True)
class OpenedSession:
    cookie: str  # goes to the browser once, stored nowhere
    row: SignInSession


def session_principal(row: SignInSession) -> Principal:
    return Principal(token_id=row.public_id, name=row.user_name, role=Role(row.role), via=row.via)


class SessionService:
    def __init__(self, db: Session, settings: SignInSettings) -> None:
        self.db = db
        self.settings = settings

    def open(self, user: str, role: Role, via: str, address: str | None) -> OpenedSession:
        cookie = secrets.token_urlsafe(32)
        now = utc_now()
        row = SignInSession(
            id=hash_token(cookie),
            public_id="s-" + secrets.token_hex(8),
            user_name=user,
            role=role.value,
            via=via,
            csrf_token=secrets.token_urlsafe(32),
            address=(address or "")[:64] or None,
            created_at=now,
            last_seen_at=now,
            expires_at=now + timedelta(seconds=self.settings.signin_session_seconds),
        )
        with transaction(self.db):
            self.db.execute(delete(SignInSession).where(SignInSession.expires_at <= now))
            self.db.add(row)
        return OpenedSession(cookie, row)

    def find(self, cookie: str) -> SignInSession | None:
        """The live session of this cookie (None: unknown, ended by time, or signed out)."""
        if not cookie or len(cookie) > MAX_COOKIE_LENGTH or not cookie.isascii():
            return None
        row = self.db.get(SignInSession, hash_token(cookie))
        if row is None:
            return None
        now = utc_now()
        idle_end = row.last_seen_at + timedelta(seconds=self.settings.signin_idle_seconds)
        if now >= row.expires_at or now >= idle_end:
            with transaction(self.db):
                self.db.delete(row)
            return None
        if now - row.last_seen_at >= SEEN_RESOLUTION:
            with transaction(self.db):
                row.last_seen_at = now
        return row

    def close(self, row: SignInSession) -> None:
        with transaction(self.db):
            self.db.delete(row)
