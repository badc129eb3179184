"""``/auth``: console sign-in with a user name and password, sign-out, and what the sign-in page
offers (ADR 052). Public routes (no token: they are how one gets in), so not ``GuardedRoute``;
``/auth/logout`` authenticates the browser's session itself. Every attempt is audited by the
audit middleware (POST): the user name as the actor, the outcome and why in the detail.

Lockout (admin_api/lockout.py, ``SignIn.*``): a locked user or address gets 429 with
``Retry-After`` before any password is checked; an unknown user name counts and locks like a
real one, and a wrong password and an unknown name get the same 401.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from ..csrf import CSRF_HEADER, csrf_problem
from ..deps import SqlSession, get_signin_settings
from ..problems import ProblemError, problem_responses, unauthorized
from ..schemas_signin import SignedIn, SignInMethods, SignInRequest
from ..security import Principal, Role
from ..services.signin_sessions import SessionService, session_principal
from ..services.users import UserService
from ..signin_cookies import SESSION_COOKIE, clear_session_cookies, set_session_cookies
from ..signin_state import SignInState, user_policy

AUTH_PREFIX = "/api/v1/auth"
router = APIRouter(prefix=AUTH_PREFIX, tags=["sign-in"])


def get_signin_state(request: Request) -> SignInState:
    state: SignInState = request.app.state.signin
    return state


SignInStateDep = Annotated[SignInState, Depends(get_signin_state)]


def client_address(request: Request) -> str:
    return request.client.host if request.client is not None else "?"


def _too_many(seconds: float, who: str) -> ProblemError:
    return ProblemError(
        429,
        f"too many failed sign-ins {who}: retry in {seconds:.0f}s",
        "too_many_attempts",
        headers={"Retry-After": str(max(1, round(seconds)))},
    )


def _audit(request: Request, name: str, detail: str) -> None:
    request.state.audit_actor = name
    request.state.audit_target = name
    request.state.audit_detail = detail


def _locked_out(state: SignInState, address: str, name: str, now: float) -> ProblemError | None:
    address_wait = state.addresses.locked_for(address, now)
    if address_wait > 0:
        return _too_many(address_wait, "from this address")
    name_wait = state.unknown_names.locked_for(name, now)
    if name_wait > 0:
        return _too_many(name_wait, "for this user")
    return None


def signed_in(row_principal: Principal, expires_at: object, csrf: str) -> SignedIn:
    return SignedIn(
        name=row_principal.name,
        role=row_principal.role,
        via="oidc" if row_principal.via == "oidc" else "password",
        session_id=row_principal.token_id,
        expires_at=expires_at,  # type: ignore[arg-type]
        csrf_token=csrf,
    )


@router.post(
    "/login",
    name="auth.login",
    response_model=SignedIn,
    responses=problem_responses(401, 429),
)
def login(
    body: SignInRequest,
    request: Request,
    response: Response,
    db: SqlSession,
    state: SignInStateDep,
) -> SignedIn:
    """Sign in with a user name and password: sets the session cookies (HttpOnly session,
    readable CSRF token) and answers who signed in and the CSRF token."""
    name, address, now = body.username, client_address(request), time.time()
    _audit(request, name, "password sign-in")
    refused = _locked_out(state, address, name, now)
    if refused is not None:
        _audit(request, name, f"refused: {refused.detail}")
        raise refused
    check = UserService(db).check(name, body.password, user_policy(state.settings))
    if check.reason == "locked":
        _audit(request, name, "refused: the user is locked out")
        raise _too_many(check.locked_for, "for this user")
    if check.user is None:
        state.addresses.failed(address, now)
        if check.reason == "unknown_user":
            state.unknown_names.failed(name, now)
        locked = " (now locked out)" if check.locked_for > 0 else ""
        _audit(request, name, f"{check.reason.replace('_', ' ')}{locked}")
        raise unauthorized("wrong user name or password", "invalid_credentials")
    state.addresses.succeeded(address)
    opened = SessionService(db, state.settings).open(
        check.user.name, Role(check.user.role), "password", address
    )
    principal = session_principal(opened.row)
    request.state.principal = principal
    set_session_cookies(response, request, state.settings, opened.cookie, opened.row.csrf_token)
    return signed_in(principal, opened.row.expires_at, opened.row.csrf_token)


@router.post("/logout", name="auth.logout", status_code=204, responses=problem_responses(401, 403))
def logout(request: Request, db: SqlSession, state: SignInStateDep) -> Response:
    """Sign out: the session ends on the server and the cookies are cleared."""
    sessions = SessionService(db, state.settings)
    row = sessions.find(request.cookies.get(SESSION_COOKIE, ""))
    if row is None:
        raise unauthorized("not signed in (no live sign-in session)", "invalid_token")
    request.state.principal = session_principal(row)
    refused = csrf_problem(request.method, row.csrf_token, request.headers.get(CSRF_HEADER))
    if refused is not None:
        raise ProblemError(403, refused, "csrf_failed")
    sessions.close(row)
    answer = Response(status_code=204)
    clear_session_cookies(answer, request, get_signin_settings(request))
    return answer


@router.get("/methods", name="auth.methods", response_model=SignInMethods)
def methods(state: SignInStateDep) -> SignInMethods:
    """What the sign-in page offers: passwords always, single sign-on when configured."""
    settings = state.settings
    if not settings.oidc_enabled:
        return SignInMethods(oidc=False)
    return SignInMethods(
        oidc=True, oidc_name=settings.oidc_display_name, oidc_start=f"{AUTH_PREFIX}/oidc/start"
    )
