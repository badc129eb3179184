"""``/auth/oidc``: single sign-on with an OpenID provider (ADR 052; admin_api/oidc.py).

``GET /auth/oidc/start`` sends the browser to the provider (a 303) with a fresh state, nonce
and PKCE challenge, and sets the ``pushgrid_oidc`` cookie to the state. ``GET
/auth/oidc/callback`` is where the provider sends it back: the flow is checked, a session is
opened with the role the claim maps to, the session cookies are set and the browser goes to
the console (303). Any failure sends it to the console's sign-in page with
``?sign_in_error=<code>``. Both outcomes are audited (action ``auth.oidc``: these are GET
requests, which the audit middleware does not record, so the route writes the entry).
"""

from __future__ import annotations

from urllib.parse import quote

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from ..deps import get_session_factory
from ..oidc import OidcClient, OidcError, OidcIdentity
from ..problems import ProblemError, problem_responses
from ..services.audit import AuditRecord, AuditService
from ..services.signin_sessions import OpenedSession, SessionService
from ..signin_cookies import OIDC_COOKIE, OIDC_COOKIE_SECONDS, secure, set_session_cookies
from .signin import AUTH_PREFIX, client_address, get_signin_state

router = APIRouter(prefix=f"{AUTH_PREFIX}/oidc", tags=["sign-in"])
CONSOLE = "/console/"
ACTION = "auth.oidc"


def oidc_client(request: Request) -> OidcClient:
    client: OidcClient | None = getattr(request.app.state, "oidc", None)
    if client is None:
        raise ProblemError(404, "single sign-on is not configured (OIDC.Issuer)", "not_found")
    return client


def redirect_uri(request: Request, client: OidcClient) -> str:
    configured = client.settings.oidc_redirect_url
    return configured or str(request.url_for("auth.oidc.callback"))


@router.get(
    "/start",
    name="auth.oidc.start",
    status_code=303,
    response_class=RedirectResponse,
    responses=problem_responses(404, 502),
)
async def start(request: Request) -> RedirectResponse:
    """Go to the OpenID provider to sign in (authorization code flow with PKCE)."""
    client = oidc_client(request)
    state, url = await client.start(redirect_uri(request, client))
    answer = RedirectResponse(url, status_code=303)
    answer.set_cookie(
        OIDC_COOKIE,
        state,
        max_age=OIDC_COOKIE_SECONDS,
        path=f"{AUTH_PREFIX}/oidc",
        secure=secure(request, client.settings),
        httponly=True,
        samesite="lax",
    )
    return answer


def _record(db: Session, request: Request, status: int, actor: str | None, detail: str) -> None:
    AuditService(db).record(
        AuditRecord(
            method="GET", path=request.url.path, action=ACTION, status=status, actor=actor,
            target=actor, detail=detail,
        )
    )  # fmt: skip


def _open(request: Request, identity: OidcIdentity) -> OpenedSession:
    state = get_signin_state(request)
    with get_session_factory(request)() as db:
        opened = SessionService(db, state.settings).open(
            identity.name, identity.role, "oidc", client_address(request)
        )
        _record(
            db, request, 303, identity.name,
            f"signed in as {identity.role.value} (sub {identity.subject}, {opened.row.public_id})",
        )  # fmt: skip
    return opened


def _refused(request: Request, error: OidcError) -> None:
    with get_session_factory(request)() as db:
        _record(db, request, error.status, None, f"{error.code}: {error.detail}")


@router.get(
    "/callback",
    name="auth.oidc.callback",
    status_code=303,
    response_class=RedirectResponse,
    responses=problem_responses(404),
)
async def callback(request: Request) -> RedirectResponse:
    """Where the OpenID provider sends the browser back: checks the answer and signs in."""
    client = oidc_client(request)
    params = request.query_params
    try:
        if params.get("error"):
            raise OidcError("provider_refused", f"the provider answered {params['error']!r}")
        identity = await client.finish(
            params.get("code"), params.get("state"), request.cookies.get(OIDC_COOKIE)
        )
    except OidcError as error:
        await anyio.to_thread.run_sync(_refused, request, error)
        answer = RedirectResponse(f"{CONSOLE}?sign_in_error={quote(error.code)}", 303)
        answer.delete_cookie(OIDC_COOKIE, path=f"{AUTH_PREFIX}/oidc")
        return answer
    opened = await anyio.to_thread.run_sync(_open, request, identity)
    answer = RedirectResponse(CONSOLE, status_code=303)
    answer.delete_cookie(OIDC_COOKIE, path=f"{AUTH_PREFIX}/oidc")
    set_session_cookies(answer, request, client.settings, opened.cookie, opened.row.csrf_token)
    return answer
