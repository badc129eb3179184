"""Who a token or a browser's session is (``GET /me``), and the roles an operator may have."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import BaseModel


class Role(StrEnum):
    """Roles, each including the ones before it: viewer < operator < admin."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def allows(self, required: Role) -> bool:
        """Whether a token with this role may call a route that requires ``required``."""
        return self.rank >= required.rank


_RANK: Final[dict[Role, int]] = {Role.VIEWER: 1, Role.OPERATOR: 2, Role.ADMIN: 3}


class Me(BaseModel):
    token_id: str
    name: str
    role: Role
