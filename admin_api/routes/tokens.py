"""``/tokens``: API tokens (admin only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response, status

from ..deps import Admin, GuardedRoute, SqlSession, audit_target
from ..problems import problem_responses
from ..schemas import TokenCreate, TokenCreated, TokenList
from ..services.tokens import TokenService

router = APIRouter(prefix="/tokens", tags=["tokens"], route_class=GuardedRoute)

TokenId = Annotated[str, Path(max_length=32, description="The token's id (not the token)")]


@router.get("", name="tokens.list", response_model=TokenList, responses=problem_responses())
def list_tokens(principal: Admin, db: SqlSession) -> TokenList:
    """Every token (never the token itself, nor its hash)."""
    return TokenList(items=TokenService(db).list())


@router.post(
    "",
    name="tokens.create",
    status_code=status.HTTP_201_CREATED,
    response_model=TokenCreated,
    responses={
        **problem_responses(),
        201: {"headers": {"Location": {"description": "The token", "schema": {"type": "string"}}}},
    },
)
def create_token(
    principal: Admin, data: TokenCreate, request: Request, response: Response, db: SqlSession
) -> TokenCreated:
    """Create a token; the answer holds it, once: only its SHA-256 is stored."""
    created = TokenService(db).create(
        data.name, data.role, created_by=principal.name, expires_in=data.expires_in
    )
    audit_target(request, created.id, f"name={created.name} role={created.role.value}")
    response.headers["Location"] = f"{request.url.path.rstrip('/')}/{created.id}"
    return created


@router.delete(
    "/{token_id}",
    name="tokens.revoke",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404),
)
def revoke_token(principal: Admin, token_id: TokenId, request: Request, db: SqlSession) -> Response:
    """Revoke a token: it gets 401 from now on (revoking twice is not an error)."""
    audit_target(request, token_id)
    revoked = TokenService(db).revoke(token_id)
    request.state.audit_detail = f"name={revoked.name}"
    return Response(status_code=status.HTTP_204_NO_CONTENT)
