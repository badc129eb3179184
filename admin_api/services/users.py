"""Console users: create, remove, change a password, and check a sign-in with lockout.

Every change made from the command line is audited in the same transaction (``CliAudit``); the
API's own are audited by its middleware. Removing a user or changing a password ends that
user's password sessions (a stolen session does not outlive the password).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import ConsoleUser, SignInSession
from pushgrid.metrics.sqlstore.models import utc_now

from ..lockout import FailureCount, LockoutPolicy, after_failure
from ..passwords import check_rules, hash_password, needs_rehash, verify_password
from ..problems import conflict, not_found
from ..schemas_signin import UserOut, UserPage
from ..security import Role
from .audit import CliAudit

MAX_USERS_LISTED = 1000


def user_out(row: ConsoleUser) -> UserOut:
    return UserOut(
        name=row.name,
        role=Role(row.role),
        created_at=row.created_at,
        created_by=row.created_by,
        password_changed_at=row.password_changed_at,
        last_sign_in_at=row.last_sign_in_at,
        locked_until=row.locked_until
        if row.locked_until and row.locked_until > utc_now()
        else None,
    )


def _seconds(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


@dataclass(frozen=True, slots=True)
class PasswordCheck:
    """The outcome of a sign-in attempt: ``user`` when it succeeded, else why not."""

    user: ConsoleUser | None
    reason: str  # "ok", "unknown_user", "wrong_password", "locked"
    locked_for: float = 0.0


def _checked_password(password: str, name: str) -> str:
    check_rules(password, name)
    return hash_password(password)


class UserService:
    def __init__(self, db: Session) -> None:
        self.db = db

    def page(self) -> UserPage:
        total = self.db.scalar(select(func.count()).select_from(ConsoleUser)) or 0
        rows = self.db.scalars(
            select(ConsoleUser).order_by(ConsoleUser.name).limit(MAX_USERS_LISTED)
        )
        return UserPage(total=total, items=[user_out(row) for row in rows])

    def get(self, name: str) -> ConsoleUser:
        row = self.db.get(ConsoleUser, name)
        if row is None:
            raise not_found(f"no console user {name!r}")
        return row

    def create(
        self,
        name: str,
        role: Role,
        password: str,
        created_by: str | None = None,
        audit: CliAudit | None = None,
    ) -> UserOut:
        if self.db.get(ConsoleUser, name) is not None:
            raise conflict(f"console user {name!r} exists already", "user_exists")
        now = utc_now()
        row = ConsoleUser(
            name=name,
            role=role.value,
            password_hash=_checked_password(password, name),
            created_at=now,
            created_by=created_by,
            password_changed_at=now,
            failed_count=0,
        )
        with transaction(self.db):
            self.db.add(row)
            if audit is not None:
                self.db.add(audit.entry(name, f"role={role.value}"))
        return user_out(row)

    def remove(self, name: str, audit: CliAudit | None = None) -> int:
        """Delete the user and end their sessions (how many ended)."""
        row = self.get(name)
        with transaction(self.db):
            ended = self._end_sessions(name)
            self.db.delete(row)
            if audit is not None:
                self.db.add(audit.entry(name, f"sessions ended={ended}"))
        return ended

    def set_password(self, name: str, password: str, audit: CliAudit | None = None) -> int:
        """A new password (clears the lockout); ends the user's sessions (how many)."""
        row = self.get(name)
        hashed = _checked_password(password, name)
        with transaction(self.db):
            row.password_hash = hashed
            row.password_changed_at = utc_now()
            row.failed_count, row.failed_since, row.locked_until = 0, None, None
            ended = self._end_sessions(name)
            if audit is not None:
                self.db.add(audit.entry(name, f"sessions ended={ended}"))
        return ended

    def _end_sessions(self, name: str) -> int:
        result = self.db.execute(
            delete(SignInSession).where(
                SignInSession.user_name == name, SignInSession.via == "password"
            )
        )
        return int(getattr(result, "rowcount", 0) or 0)

    def check(self, name: str, password: str, policy: LockoutPolicy) -> PasswordCheck:
        """Check a sign-in: a locked user is refused before the password is looked at; a wrong
        password counts towards the lockout; a right one clears the count."""
        row = self.db.get(ConsoleUser, name)
        now = utc_now().timestamp()
        if row is None:
            verify_password(None, password)  # the same time as a wrong password
            return PasswordCheck(None, "unknown_user")
        state = FailureCount(
            row.failed_count, _seconds(row.failed_since), _seconds(row.locked_until)
        )
        if state.locked_for(now) > 0:
            return PasswordCheck(None, "locked", state.locked_for(now))
        if not verify_password(row.password_hash, password):
            state = after_failure(state, now, policy)
            with transaction(self.db):
                row.failed_count = state.count
                row.failed_since = _moment(state.since)
                row.locked_until = _moment(state.locked_until)
            return PasswordCheck(None, "wrong_password", state.locked_for(now))
        with transaction(self.db):
            row.failed_count, row.failed_since, row.locked_until = 0, None, None
            row.last_sign_in_at = utc_now()
            if needs_rehash(row.password_hash):
                row.password_hash = hash_password(password)
        return PasswordCheck(row, "ok")
