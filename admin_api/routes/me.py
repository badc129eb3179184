"""``/me``: who the token is."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import GuardedRoute, Viewer
from ..problems import problem_responses
from ..schemas import Me

router = APIRouter(tags=["me"], route_class=GuardedRoute)


@router.get("/me", name="me.get", response_model=Me, responses=problem_responses())
def get_me(principal: Viewer) -> Me:
    """The token's name, id and role."""
    return Me(token_id=principal.token_id, name=principal.name, role=principal.role)
