"""SQL tables of the admin API, on the same :class:`~.models.Base` as the pipeline.

=================  ==============================================================================
table              content
=================  ==============================================================================
``admin_members``  members registered at run time (configured ones live in ``Admin.Members``);
                   their monitoring credentials are kept here (the password encrypted,
                   migration ``0005``) and never returned by the API
``admin_tokens``   API tokens: the SHA-256 of the token (never the token), role, name, times,
                   an optional expiry (migration ``0005``)
``admin_audit``    one row per mutating request: who, what, when, outcome
``alert_rules``    alert rules (issue 17, migration ``0003_alerts.py``)
``alert_events``   alert state changes: pending, firing, resolved
``alert_silences`` silences: a rule's alerts (on one target or all) are not announced until a time
``alert_acks``     acknowledgements of active alerts (removed when the alert resolves)
``admin_users``    console users: name, role, an argon2id password hash (never the password),
                   the lockout counters (migration ``0009``, ADR 052)
``admin_sessions`` console sign-in sessions: the SHA-256 of the cookie (never the cookie), the
                   user, role, CSRF token and expiry
``slo_objectives`` service level objectives (migrations ``0012``, ``0013``; ADR 055)
``slo_minutes``    their good and total events per minute (kept for the objective's period)
=================  ==============================================================================

The schema is created by the Alembic migrations ``alembic/versions/0002_admin_api.py`` and
``0003_alerts.py`` (``0006_alert_operations.py``: hysteresis, built-in rules, silences and
acknowledgements); keep them in step (``tests/unit/test_admin_models.py`` compares them). The
tables live in the store, not in ``admin_api``, so the migrations see every table without
importing the admin API (ADR 015).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, UTCDateTime, utc_now

__all__ = [
    "NAME_LENGTH",
    "ROLE_NAMES",
    "URL_LENGTH",
    "AlertAck",
    "AlertEvent",
    "AlertRule",
    "AlertSilence",
    "ApiToken",
    "AuditEntry",
    "Base",
    "ConsoleUser",
    "RegisteredMember",
    "SignInSession",
    "SloMinute",
    "SloObjective",
]

NAME_LENGTH: Final = 64
URL_LENGTH: Final = 2048
CREDENTIAL_LENGTH: Final = 255
SEALED_CREDENTIAL_LENGTH: Final = 1024  # a Fernet token of a 255-character password fits
TOKEN_NAME_LENGTH: Final = 128
ROLE_NAMES: Final[tuple[str, ...]] = ("viewer", "operator", "admin")


class RegisteredMember(Base):
    """A server registered through ``POST /api/v1/members`` (configured members are not here)."""

    __tablename__ = "admin_members"

    name: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    monitor_url: Mapped[str] = mapped_column(String(URL_LENGTH))
    client_url: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    username: Mapped[str | None] = mapped_column(String(CREDENTIAL_LENGTH))
    # encrypted at rest (admin_api/secretbox.py: "fernet:" + a Fernet token), never in clear
    password: Mapped[str | None] = mapped_column(String(SEALED_CREDENTIAL_LENGTH))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    created_by: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))

    def __repr__(self) -> str:  # no credentials in logs
        return f"RegisteredMember(name={self.name!r}, monitor_url={self.monitor_url!r})"


class ApiToken(Base):
    """An API token. ``token_hash`` is the hex SHA-256 of the token; the token itself is shown
    once, when it is created, and stored nowhere."""

    __tablename__ = "admin_tokens"
    __table_args__ = (CheckConstraint("role IN ('viewer', 'operator', 'admin')", name="role"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(TOKEN_NAME_LENGTH))
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    created_by: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # None: never expires

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def __repr__(self) -> str:
        return f"ApiToken(id={self.id!r}, name={self.name!r}, role={self.role!r})"


class AuditEntry(Base):
    """One mutating request (POST, PUT, PATCH, DELETE) and how it ended."""

    __tablename__ = "admin_audit"
    __table_args__ = (Index(None, "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    actor: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))
    token_id: Mapped[str | None] = mapped_column(String(32))
    role: Mapped[str | None] = mapped_column(String(16))
    method: Mapped[str] = mapped_column(String(8))
    path: Mapped[str] = mapped_column(String(URL_LENGTH))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(1024))
    status: Mapped[int] = mapped_column(Integer)
    detail: Mapped[str | None] = mapped_column(Text)

    def __repr__(self) -> str:
        return f"AuditEntry(id={self.id!r}, action={self.action!r}, status={self.status!r})"


# --- alert rules (issue 17; migration 0003) ----------------------------------------------------


class AlertRule(Base):
    """An alert rule over the live indicators (docs/alerts.md). ``name`` is the Prometheus
    alert name of ``pushgrid admin export-rules``."""

    __tablename__ = "alert_rules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    indicator: Mapped[str] = mapped_column(String(64))
    window: Mapped[str] = mapped_column(String(8))
    stat: Mapped[str] = mapped_column(String(8))
    comparison: Mapped[str] = mapped_column(String(2))
    threshold: Mapped[float] = mapped_column(Float)
    for_seconds: Mapped[float] = mapped_column(Float)
    severity: Mapped[str] = mapped_column(String(16))
    scope: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(String(1024), default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    created_by: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))
    clear_threshold: Mapped[float | None] = mapped_column(Float)  # None: the threshold
    clear_for: Mapped[float | None] = mapped_column(Float)  # None: for_seconds
    builtin: Mapped[bool] = mapped_column(Boolean, default=False)  # seeded by migration 0006

    def __repr__(self) -> str:
        return f"AlertRule(id={self.id!r}, name={self.name!r})"


class AlertEvent(Base):
    """One state change of an alert (a rule on a target): pending, firing or resolved."""

    __tablename__ = "alert_events"
    __table_args__ = (Index(None, "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    rule_id: Mapped[int] = mapped_column(Integer)  # no foreign key: history outlives its rule
    rule: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(NAME_LENGTH))
    state: Mapped[str] = mapped_column(String(16))
    value: Mapped[float | None] = mapped_column(Float)
    summary: Mapped[str] = mapped_column(String(1024))


class AlertSilence(Base):
    """The alerts of a rule (on ``target``, or on every target when it is None) are evaluated and
    recorded but not announced until ``until``."""

    __tablename__ = "alert_silences"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    rule_id: Mapped[int] = mapped_column(ForeignKey("alert_rules.id", ondelete="CASCADE"))
    target: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    until: Mapped[datetime] = mapped_column(UTCDateTime)
    comment: Mapped[str] = mapped_column(String(1024), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    created_by: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))


class AlertAck(Base):
    """An operator has seen an active alert (a rule on a target); gone when it resolves."""

    __tablename__ = "alert_acks"

    rule_id: Mapped[int] = mapped_column(
        ForeignKey("alert_rules.id", ondelete="CASCADE"), primary_key=True
    )
    target: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    by: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))
    comment: Mapped[str] = mapped_column(String(1024), default="")


# --- console sign-in (issue 35 item 5; migration 0009; ADR 052) ----------------------------------


class ConsoleUser(Base):
    """A console user who signs in with a password (``pushgrid admin user add``)."""

    __tablename__ = "admin_users"
    __table_args__ = (CheckConstraint("role IN ('viewer', 'operator', 'admin')", name="role"),)

    name: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str] = mapped_column(String(255))  # argon2id, PHC string
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    created_by: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))
    password_changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    last_sign_in_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # lockout (admin_api/lockout.py): failures since failed_since; locked while locked_until
    failed_count: Mapped[int] = mapped_column(Integer, default=0)
    failed_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:  # no hash in logs
        return f"ConsoleUser(name={self.name!r}, role={self.role!r})"


class SignInSession(Base):
    """A signed-in browser: the cookie's SHA-256 is the key (the cookie is stored nowhere)."""

    __tablename__ = "admin_sessions"
    __table_args__ = (
        CheckConstraint("role IN ('viewer', 'operator', 'admin')", name="role"),
        Index(None, "user_name"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    public_id: Mapped[str] = mapped_column(String(32), unique=True)  # in audit entries
    user_name: Mapped[str] = mapped_column(String(TOKEN_NAME_LENGTH))
    role: Mapped[str] = mapped_column(String(16))
    via: Mapped[str] = mapped_column(String(16))  # password | oidc
    csrf_token: Mapped[str] = mapped_column(String(64))
    address: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:  # no secrets in logs
        return f"SignInSession(public_id={self.public_id!r}, user_name={self.user_name!r})"


# --- service level objectives (issue 33 item 6; migration 0012; ADR 055) -------------------------


class SloObjective(Base):
    """An objective: ``target`` of the ``kind``'s events good over ``period_days``
    (admin_api/slo.py says what good and total are per kind)."""

    __tablename__ = "slo_objectives"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(48), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    target: Mapped[float] = mapped_column(Float)
    period_days: Mapped[int] = mapped_column(Integer)
    threshold_ms: Mapped[float | None] = mapped_column(Float)  # latency only
    # the one member whose clients count (migration 0013); None: the whole cluster
    member: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    # one watched pattern's deliveries (migration 0013); None: every subject
    pattern: Mapped[str | None] = mapped_column(String(1024))
    description: Mapped[str] = mapped_column(String(1024), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    created_by: Mapped[str | None] = mapped_column(String(TOKEN_NAME_LENGTH))

    def __repr__(self) -> str:
        return f"SloObjective(id={self.id!r}, name={self.name!r})"


class SloMinute(Base):
    """An objective's events in one minute (``minute``: its start, Unix seconds), summed over
    the members."""

    __tablename__ = "slo_minutes"

    objective_id: Mapped[int] = mapped_column(
        ForeignKey("slo_objectives.id", ondelete="CASCADE"), primary_key=True
    )
    minute: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    good: Mapped[int] = mapped_column(BigInteger)
    total: Mapped[int] = mapped_column(BigInteger)
