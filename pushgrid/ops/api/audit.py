"""One admin action in the audit log (``GET /audit``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from .me import Role


class AuditOut(BaseModel):
    id: int
    at: datetime
    actor: str | None = Field(description="The token's name (null: no valid token)")
    token_id: str | None
    role: Role | None
    method: str
    path: str
    action: str
    target: str | None
    status: int = Field(description="The HTTP status of the answer")
    outcome: Literal["succeeded", "denied", "failed"]
    detail: str | None
