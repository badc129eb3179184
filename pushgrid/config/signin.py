"""The console's sign-in (ADR 052): sessions, lockout and OpenID Connect single sign-on.

Passwords of console users are stored by the admin API (``pushgrid admin user add``); these keys
say how long a session lives, when repeated failures lock a user or an address out, and which
OpenID provider (if any) signs users in. Every error names its key.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .fields import NameList

ROLE_NAMES = ("viewer", "operator", "admin")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _check_issuer(value: str | None) -> str | None:
    """An https URL, or http on a loopback host (a provider on this machine, for tests)."""
    if value is None or not value.strip():
        return None
    value = value.strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return value
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return value
    raise ValueError(f"{value!r} is not an https:// URL (plain http only on 127.0.0.1/localhost)")


def role_map(entries: list[str]) -> dict[str, str]:
    """``value=role`` pairs of ``OIDC.RoleMap`` as a dict (checked by the validator)."""
    mapped: dict[str, str] = {}
    for entry in entries:
        value, _, role = entry.rpartition("=")
        mapped[value.strip()] = role.strip().lower()
    return mapped


class SignInSettings(BaseModel):
    """Console sign-in: password sessions and OpenID Connect."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    # a session ends this long after sign-in whatever happens (absolute), or after this long
    # without a request (idle)
    signin_session_seconds: int = Field(
        default=28_800, ge=300, le=2_592_000, alias="SignIn.SessionSeconds"
    )
    signin_idle_seconds: int = Field(default=1_800, ge=60, le=86_400, alias="SignIn.IdleSeconds")
    # lockout: this many failed passwords for one user (or from one address) within the window
    # lock that user (address) out for LockoutSeconds
    signin_max_failures: int = Field(default=5, ge=1, le=1000, alias="SignIn.MaxFailures")
    signin_address_max_failures: int = Field(
        default=20, ge=1, le=100_000, alias="SignIn.AddressMaxFailures"
    )
    signin_failure_window: int = Field(default=900, ge=10, le=86_400, alias="SignIn.FailureWindow")
    signin_lockout_seconds: int = Field(default=900, ge=1, le=86_400, alias="SignIn.LockoutSeconds")
    # Secure cookie flag: auto = when the request came over https; always = behind a TLS proxy
    signin_secure_cookies: Literal["auto", "always"] = Field(
        default="auto", alias="SignIn.SecureCookies"
    )

    oidc_issuer: str | None = Field(default=None, alias="OIDC.Issuer")
    oidc_client_id: str | None = Field(default=None, alias="OIDC.ClientId")
    oidc_client_secret: str | None = Field(default=None, alias="OIDC.ClientSecret")
    oidc_client_secret_file: Path | None = Field(default=None, alias="OIDC.ClientSecretFile")
    oidc_redirect_url: str | None = Field(default=None, alias="OIDC.RedirectUrl")
    oidc_scopes: NameList = Field(default=["openid", "profile", "email"], alias="OIDC.Scopes")
    oidc_role_claim: str = Field(
        default="pushgrid_role", min_length=1, max_length=128, alias="OIDC.RoleClaim"
    )
    oidc_role_map: NameList = Field(default=[], alias="OIDC.RoleMap")
    oidc_name_claim: str = Field(
        default="preferred_username", min_length=1, max_length=128, alias="OIDC.NameClaim"
    )
    oidc_display_name: str = Field(
        default="SSO", min_length=1, max_length=64, alias="OIDC.DisplayName"
    )

    #: (file key, key): the secret may be read from a file (pushgrid/config/settings.py)
    secret_files: ClassVar[tuple[tuple[str, str], ...]] = (
        ("oidc_client_secret_file", "oidc_client_secret"),
    )

    @field_validator("oidc_issuer")
    @classmethod
    def _issuer(cls, value: str | None) -> str | None:
        return _check_issuer(value)

    @field_validator("oidc_redirect_url")
    @classmethod
    def _redirect(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s):// URL")
        return value.strip()

    @field_validator("oidc_role_map")
    @classmethod
    def _roles(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            value, sep, role = entry.rpartition("=")
            if not sep or not value.strip() or role.strip().lower() not in ROLE_NAMES:
                raise ValueError(f"{entry!r} is not claim-value=viewer|operator|admin")
        return entries

    @field_validator("oidc_scopes")
    @classmethod
    def _scopes(cls, scopes: list[str]) -> list[str]:
        if "openid" not in scopes:
            raise ValueError("the scopes must include openid")
        return scopes

    @model_validator(mode="after")
    def _oidc_complete(self) -> SignInSettings:
        if self.oidc_issuer and not self.oidc_client_id:
            raise ValueError("OIDC.Issuer is set: OIDC.ClientId is required too")
        if self.oidc_client_id and not self.oidc_issuer:
            raise ValueError("OIDC.ClientId is set: OIDC.Issuer is required too")
        return self

    @property
    def oidc_enabled(self) -> bool:
        return self.oidc_issuer is not None

    def oidc_roles(self) -> dict[str, str]:
        """Claim value -> role; without ``OIDC.RoleMap`` the role names map to themselves."""
        return role_map(self.oidc_role_map) or {role: role for role in ROLE_NAMES}
