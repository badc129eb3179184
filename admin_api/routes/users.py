"""``/users``: console users who sign in with a password (admin only; ADR 052)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response, status

from ..deps import Admin, GuardedRoute, SqlSession, audit_target
from ..problems import problem_responses
from ..schemas_signin import PasswordChange, UserCreate, UserOut, UserPage
from ..services.users import UserService

router = APIRouter(prefix="/users", tags=["users"], route_class=GuardedRoute)

UserNamePath = Annotated[str, Path(max_length=64, description="The user's name")]


@router.get("", name="users.list", response_model=UserPage, responses=problem_responses())
def list_users(principal: Admin, db: SqlSession) -> UserPage:
    """Every console user (at most 1,000; never a password or its hash)."""
    return UserService(db).page()


@router.post(
    "",
    name="users.create",
    status_code=status.HTTP_201_CREATED,
    response_model=UserOut,
    responses=problem_responses(409),
)
def create_user(
    principal: Admin, data: UserCreate, request: Request, response: Response, db: SqlSession
) -> UserOut:
    """Create a console user with a password (at least 12 characters; stored as argon2id)."""
    audit_target(request, data.name, f"role={data.role.value}")
    created = UserService(db).create(data.name, data.role, data.password, principal.name)
    response.headers["Location"] = f"{request.url.path.rstrip('/')}/{created.name}"
    return created


@router.put(
    "/{name}/password",
    name="users.passwd",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404),
)
def change_password(
    principal: Admin, name: UserNamePath, data: PasswordChange, request: Request, db: SqlSession
) -> Response:
    """Set a user's password: clears a lockout and ends the user's sessions."""
    audit_target(request, name)
    ended = UserService(db).set_password(name, data.password)
    request.state.audit_detail = f"sessions ended={ended}"
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.delete(
    "/{name}",
    name="users.remove",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404),
)
def remove_user(principal: Admin, name: UserNamePath, request: Request, db: SqlSession) -> Response:
    """Remove a user: their sessions end at once."""
    audit_target(request, name)
    ended = UserService(db).remove(name)
    request.state.audit_detail = f"sessions ended={ended}"
    return Response(status_code=status.HTTP_204_NO_CONTENT)
