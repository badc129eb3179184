"""Request and answer documents of console sign-in and console users (ADR 052)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from .security import Role

UserName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._@+-]+$"
    ),
]
Password = Annotated[str, StringConstraints(min_length=1, max_length=1024)]


class SignInRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: UserName
    password: Password


class SignedIn(BaseModel):
    """The signed-in browser: who, which role, how, until when, and the CSRF token its
    state-changing requests must send in ``X-CSRF-Token``."""

    name: str
    role: Role
    via: Literal["password", "oidc"]
    session_id: str
    expires_at: datetime
    csrf_token: str


class SignInMethods(BaseModel):
    """What the sign-in page offers (public)."""

    password: bool = True
    oidc: bool
    oidc_name: str | None = None
    oidc_start: str | None = Field(
        default=None, description="Where the browser goes to sign in with SSO"
    )


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: UserName
    role: Role
    password: Password


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    password: Password


class UserOut(BaseModel):
    name: str
    role: Role
    created_at: datetime
    created_by: str | None
    password_changed_at: datetime
    last_sign_in_at: datetime | None
    locked_until: datetime | None


class UserPage(BaseModel):
    total: int
    items: list[UserOut]
