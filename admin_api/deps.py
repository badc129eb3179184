"""Dependencies of the routes, as ``Annotated`` aliases.

Authorization: every route takes exactly one role dependency, ``Depends(require(Role.X))``
(aliases :data:`Viewer`, :data:`Operator`, :data:`Admin`), and every router uses
``route_class=GuardedRoute``, which runs that check before FastAPI reads the body or validates
parameters: a request without a valid token gets 401 whatever it sends, a token with a lower
role gets 403. ``tests/integration/test_admin_roles.py`` walks the app's routes and fails for a
route without exactly one :class:`RoleGuard` or not a :class:`GuardedRoute`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Annotated, Any, cast

import httpx
from fastapi import Depends, Path, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from pushgrid.config import AdminSettings, JmxSettings, SignInSettings
from pushgrid.kernel.throttle import AuthThrottle

from .answering import Answering
from .csrf import CSRF_HEADER, csrf_problem
from .member_client import MemberEndpoint, new_http_client
from .problems import ProblemError, unauthorized
from .security import Principal, Role, display_prefix, throttle_key
from .services.cluster import with_discovered
from .services.history import HistoryCollector
from .services.jobs import JobRunner
from .services.members import MemberService
from .services.signin_sessions import SessionService, session_principal
from .services.tokens import TokenService
from .signin_cookies import SESSION_COOKIE


def get_admin_settings(request: Request) -> AdminSettings:
    """The admin API's own part of the settings (create_app keeps only the parts it hands
    out: no route can read the whole Settings)."""
    return cast(AdminSettings, request.app.state.admin_settings)


def get_jmx_settings(request: Request) -> JmxSettings:
    """The JMX part (the login of ``service:jmx:`` members)."""
    return cast(JmxSettings, request.app.state.jmx_settings)


def get_signin_settings(request: Request) -> SignInSettings:
    """Console sign-in: sessions, lockout, OpenID Connect (ADR 052)."""
    return cast(SignInSettings, request.app.state.signin_settings)


def get_session_factory(request: Request) -> sessionmaker[Session]:
    return cast("sessionmaker[Session]", request.app.state.session_factory)


def get_db(request: Request) -> Iterator[Session]:
    with get_session_factory(request)() as db:
        yield db


async def get_http(request: Request) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for member calls, for this request (bound to the running event loop);
    members known not to answer fail at once (admin_api/answering.py)."""
    timeout = float(request.app.state.member_timeout)
    async with new_http_client(timeout, get_answering(request)) as http:
        yield http


def get_answering(request: Request) -> Answering:
    return cast(Answering, request.app.state.answering)


AnsweringDep = Annotated[Answering, Depends(get_answering)]


def get_auth_throttle(request: Request) -> AuthThrottle:
    return cast(AuthThrottle, request.app.state.auth_throttle)


def get_job_runner(request: Request) -> JobRunner:
    return cast(JobRunner, request.app.state.job_runner)


def get_history(request: Request) -> HistoryCollector:
    return cast(HistoryCollector, request.app.state.history)


AdminSettingsDep = Annotated[AdminSettings, Depends(get_admin_settings)]
JmxSettingsDep = Annotated[JmxSettings, Depends(get_jmx_settings)]
SqlSession = Annotated[Session, Depends(get_db)]
SqlSessionFactory = Annotated["sessionmaker[Session]", Depends(get_session_factory)]
HttpDep = Annotated[httpx.AsyncClient, Depends(get_http)]
JobRunnerDep = Annotated[JobRunner, Depends(get_job_runner)]
HistoryDep = Annotated[HistoryCollector, Depends(get_history)]

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="BearerToken",
    description="An API token (`pushgrid admin create-token --role ROLE`), sent as "
    "`Authorization: Bearer pgt_...`",
)


def _bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class RoleGuard:
    """Authenticates the token and checks the route's role (401 / 403 problems).

    It runs twice per request, both times cheaply: first from :class:`GuardedRoute`, before
    FastAPI reads the body or validates parameters (so an anonymous request is a 401 whatever
    it sends), then as the route's dependency (which documents the security scheme in OpenAPI
    and hands the route its :class:`Principal`).
    """

    def __init__(self, role: Role) -> None:
        self.role = role

    def __repr__(self) -> str:
        return f"require(Role.{self.role.name})"

    def _check_role(self, principal: Principal) -> Principal:
        if not principal.role.allows(self.role):
            raise ProblemError(
                403,
                f"this route needs the {self.role.value} role; token {principal.name!r} has "
                f"{principal.role.value}",
                "forbidden",
            )
        return principal

    def _authenticate(self, request: Request, db: Session, token: str | None) -> Principal:
        # Failures are counted per (address, token prefix): every console user signs in from
        # the admin API's own address, and one guesser there must not lock out a valid token.
        # After AuthFailuresBeforeBackoff wrong tokens with one prefix from one address, that
        # pair gets 429 during a doubling back-off before any lookup. Failures with a prefix
        # no active token has count per address too (issue 34: a guesser changing the prefix
        # each time was never throttled), and while that address is backed off only a token
        # whose prefix an active token has is looked up; a valid token still goes through.
        if token is None:
            raise unauthorized("an API token is required: Authorization: Bearer <token>")
        throttle = get_auth_throttle(request)
        address = request.client.host if request.client is not None else "?"
        key = throttle_key(address, token)
        tokens = TokenService(db)
        known: bool | None = None  # does an active token have this prefix? (asked when needed)
        wait = throttle.retry_after(key)
        if wait <= 0 and throttle.blocked_for(address) > 0:
            known = tokens.prefix_known(display_prefix(token))
            wait = 0.0 if known else throttle.retry_after(address)
        if wait > 0:
            raise ProblemError(
                429,
                f"too many failed attempts with this API token from this address: retry in "
                f"{wait:.1f}s",
                "too_many_attempts",
                headers={"Retry-After": str(max(1, round(wait)))},
            )
        principal = tokens.authenticate(token)
        if principal is None:
            throttle.failed(key)
            if not (known if known is not None else tokens.prefix_known(display_prefix(token))):
                throttle.failed(address)  # the address's count of unknown prefixes
            raise unauthorized("unknown, expired or revoked API token", "invalid_token")
        throttle.succeeded(key)
        request.state.principal = principal
        return self._check_role(principal)

    def _authenticate_cookie(self, request: Request, db: Session, cookie: str) -> Principal:
        """A signed-in browser (ADR 052): its session must be live, and a request that may
        change something must carry the session's CSRF token (admin_api/csrf.py)."""
        row = SessionService(db, get_signin_settings(request)).find(cookie)
        if row is None:
            raise unauthorized("the sign-in session has ended: sign in again", "invalid_token")
        principal = session_principal(row)
        request.state.principal = principal
        refused = csrf_problem(request.method, row.csrf_token, request.headers.get(CSRF_HEADER))
        if refused is not None:
            raise ProblemError(403, refused, "csrf_failed")
        return self._check_role(principal)

    def _either(self, request: Request, db: Session, token: str | None) -> Principal:
        """The bearer token when one is sent (automation: unchanged), else the browser's
        sign-in cookie, else 401."""
        cookie = request.cookies.get(SESSION_COOKIE)
        if token is None and cookie:
            return self._authenticate_cookie(request, db, cookie)
        return self._authenticate(request, db, token)

    def authorize(self, request: Request) -> Principal:
        """The check :class:`GuardedRoute` runs first (in a worker thread: it reads SQL)."""
        with get_session_factory(request)() as db:
            return self._either(request, db, _bearer_token(request))

    def __call__(
        self,
        request: Request,
        db: SqlSession,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        principal = getattr(request.state, "principal", None)
        if isinstance(principal, Principal):  # authorized by GuardedRoute already
            return self._check_role(principal)
        token = credentials.credentials if credentials is not None else None
        return self._either(request, db, token)


def require(role: Role) -> RoleGuard:
    return RoleGuard(role)


def route_guards(dependant: Dependant) -> list[RoleGuard]:
    """Every :class:`RoleGuard` among a route's dependencies (recursively)."""
    found: list[RoleGuard] = []
    for dependency in dependant.dependencies:
        if isinstance(dependency.call, RoleGuard):
            found.append(dependency.call)
        found.extend(route_guards(dependency))
    return found


class GuardedRoute(APIRoute):
    """An API route whose role is checked before anything else (see :class:`RoleGuard`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        guards = route_guards(self.dependant)

        async def guarded(request: Request) -> Response:
            for guard in guards:
                await run_in_threadpool(guard.authorize, request)
            return await handler(request)

        return guarded


Viewer = Annotated[Principal, Depends(require(Role.VIEWER))]
Operator = Annotated[Principal, Depends(require(Role.OPERATOR))]
Admin = Annotated[Principal, Depends(require(Role.ADMIN))]


MemberNamePath = Annotated[str, Path(max_length=255, description="The member's name")]


def get_member_service(
    db: SqlSession, admin: AdminSettingsDep, jmx: JmxSettingsDep
) -> MemberService:
    """Configured and registered members, on this request's session."""
    return MemberService(db, admin, jmx)


MemberServiceDep = Annotated[MemberService, Depends(get_member_service)]


async def get_members(
    service: MemberServiceDep, admin: AdminSettingsDep, http: HttpDep
) -> list[MemberEndpoint]:
    """Configured, registered, then discovered members (from the members' cluster views)."""
    return await with_discovered(http, service.all(), admin.admin_discover_allow)


async def get_member(
    name: MemberNamePath, service: MemberServiceDep, admin: AdminSettingsDep, http: HttpDep
) -> MemberEndpoint:
    """The member named by the ``{name}`` path parameter (404 problem if unknown)."""
    try:
        return service.get(name)
    except ProblemError as exc:
        if exc.status != 404:
            raise
        for member in await with_discovered(http, service.all(), admin.admin_discover_allow):
            if member.name == name:
                return member
        raise


MemberDep = Annotated[MemberEndpoint, Depends(get_member)]
MembersDep = Annotated[list[MemberEndpoint], Depends(get_members)]


def audit_target(request: Request, target: str | None, detail: str | None = None) -> None:
    """What a mutating route acted on, for its audit entry (see :mod:`admin_api.audit`)."""
    request.state.audit_target = target
    if detail is not None:
        request.state.audit_detail = detail
