"""The admin API application: :func:`create_app`.

    app = create_app(load_settings(path))                    # engine from the Database setting
    app = create_app(settings, session_factory=factory)      # tests: a temporary SQLite file

The database schema must be migrated first (``pushgrid admin`` does it at start:
``metrics.sqlstore.upgrade``). OpenAPI is served at ``/api/v1/openapi.json`` and the
interactive docs at ``/api/docs`` (assets served locally, admin_api/docs.py); both are public
(they hold no data), every ``/api/v1`` route needs a token. Every answer carries the browser
security headers (:class:`SecurityHeaders`); log lines never carry a secret
(:func:`install_log_redaction`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from sqlalchemy import inspect, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pushgrid import __version__
from pushgrid.config import AdminSettings, AlertsSettings, JmxSettings, Settings
from pushgrid.console.security import COMMON_HEADERS, DATA_POLICY
from pushgrid.kernel.redaction import RedactingFilter
from pushgrid.kernel.throttle import AuthThrottle
from pushgrid.metrics.sqlstore import make_session_factory
from pushgrid.metrics.sqlstore.admin_models import RegisteredMember
from pushgrid.metrics.sqlstore.engine import private_database_file

from .answering import Answering
from .audit import AuditMiddleware
from .canary_probe import CanaryProbes
from .docs import add_docs
from .history import HistoryStore
from .member_client import DEFAULT_TIMEOUT
from .oidc import OidcClient
from .pipeline_metrics import route as metrics_route
from .problems import Problem, install
from .routes import API_PREFIX, api_router
from .routes.signin import router as signin_router
from .routes.signin_oidc import router as oidc_router
from .secretbox import secret_box
from .services.alerts import AlertRunner
from .services.cluster import MemberWatch
from .services.history import HistoryCollector
from .services.jobs import JobRunner
from .services.members import MemberService
from .services.slo_recorder import SloRecorder
from .services.trace import TraceHub
from .signin_state import SignInState

OPENAPI_URL = f"{API_PREFIX}/openapi.json"
DOCS_URL = "/api/docs"

DESCRIPTION = """\
Administration of a pushgrid cluster: members, live and pipeline statistics, subjects,
sessions, statistics jobs, audit log and API tokens.

**Authentication**: `Authorization: Bearer <token>`; tokens are created with
`pushgrid admin create-token --role viewer|operator|admin` or `POST /api/v1/tokens`.
Roles: *viewer* reads; *operator* also publishes test messages, disconnects sessions and
triggers statistics runs; *admin* also manages members, tokens and reads the audit log.

**Errors** are RFC 9457 `application/problem+json` documents (`type`, `title`, `status`,
`detail`, `instance`, `code`, and `member` for member errors).
"""


def _openapi(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema is not None:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        tags=app.openapi_tags,
    )
    problem = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    definitions = problem.pop("$defs", {})
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(definitions)
    schemas["Problem"] = problem
    app.openapi_schema = schema
    return schema


class SecurityHeaders:
    """Every answer gets the browser security headers (console/security.py); one that set its
    own Content-Security-Policy (a page: the docs, the console) keeps it, the others are data
    (``default-src 'none'``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in COMMON_HEADERS.items():
                    headers.setdefault(name, value)
                headers.setdefault("Content-Security-Policy", DATA_POLICY)
            await send(message)

        await self.app(scope, receive, with_headers)


#: loggers whose lines may carry a URL with a secret: uvicorn's access log (``?token=`` a
#: client put in a query string), httpx (every request URL: members, the alert webhook)
REDACTED_LOGGERS = ("uvicorn.access", "uvicorn.error", "httpx", "httpcore", "pushgrid")


def install_log_redaction(alerts: AlertsSettings, admin: AdminSettings) -> None:
    """Mask secrets in those loggers' lines: query-string tokens and URL passwords always, and
    the configured secrets (the alert webhook URL, member passwords) wherever they appear.
    Logger filters survive uvicorn's logging set-up; installing again replaces them."""
    secrets = [s for s in (alerts.alerts_webhook, admin.admin_member_password) if s is not None]
    redaction = RedactingFilter(secrets)
    for name in REDACTED_LOGGERS:
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, RedactingFilter)]:
            logger.removeFilter(old)
        logger.addFilter(redaction)


def _operation_id(route: APIRoute) -> str:
    """The route's name (``members.register``), which the audit log calls its action."""
    return route.name


log = logging.getLogger(__name__)


def protect_store(
    database: str, admin: AdminSettings, jmx: JmxSettings, factory: sessionmaker[Session]
) -> None:
    """Secrets at rest (issue 22): a SQLite store is readable by its owner only (0600, its
    journal files follow), the member-password key is loaded (a bad key file stops start-up)
    and passwords stored in clear by older versions are encrypted."""
    url = make_url(database)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        path = Path(url.database)
        if path.exists():
            private_database_file(path)  # (make_engine creates it so; an older one is re-moded)
    secret_box(admin)
    try:
        with factory() as db:
            if inspect(db.get_bind()).has_table(RegisteredMember.__tablename__):
                encrypted = MemberService(db, admin, jmx).encrypt_stored()
                if encrypted:
                    log.warning("encrypted %d member password(s) stored in clear", encrypted)
    except SQLAlchemyError as exc:  # the routes report an unusable store themselves
        log.warning("cannot check the stored member passwords: %s", exc)


def create_app(
    settings: Settings,
    session_factory: sessionmaker[Session] | None = None,
    job_runner: JobRunner | None = None,
    member_timeout: float = DEFAULT_TIMEOUT,
) -> FastAPI:
    """The admin API for ``settings`` (sessions on ``session_factory``, or on ``Database``).

    The admin process's composition root: each service gets its part of the settings and the
    app keeps only the parts its routes read (``app.state.admin_settings``, ``jmx_settings``).
    ``member_timeout``: seconds a member call may take before it is a 504 problem.
    """
    admin, jmx, stats = settings.admin, settings.jmx, settings.stats
    monitoring = settings.monitoring
    factory = session_factory or make_session_factory(stats.database)
    protect_store(stats.database, admin, jmx, factory)
    runner = job_runner or JobRunner(stats, monitoring.metrics_archive)
    # which members do not answer (issue 34, 4.1): the watch asks, the rest skip them
    answering = Answering()
    alerts = AlertRunner(
        settings.alerts,
        lambda: app.state.session_factory(),
        lambda db: MemberService(db, admin, jmx).all(),
        answering,
    )
    slo_recorder = SloRecorder(  # the objectives' events (ADR 055)
        settings.alerts,
        lambda: app.state.session_factory(),
        lambda db: MemberService(db, admin, jmx).all(),
        answering,
    )
    traces = TraceHub(settings.trace)
    watch = MemberWatch(
        lambda: _members(app, admin, jmx), answering=answering, allow=admin.admin_discover_allow
    )
    probes = CanaryProbes(  # the admin API's own subscriber on every member (ADR 049)
        lambda: _members(app, admin, jmx), admin.admin_discover_allow, answering
    )
    history = HistoryCollector(
        HistoryStore(admin.admin_history_seconds),
        lambda: _members(app, admin, jmx),
        admin.admin_discover_allow,
        answering=answering,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        alerts.start()
        slo_recorder.start()
        traces.start()
        watch.start()
        history.start()
        probes.start()
        try:
            yield
        finally:
            await probes.stop()
            await history.stop()
            await watch.stop()
            await alerts.stop()
            await slo_recorder.stop()
            await traces.close()
            runner.close()

    app = FastAPI(
        title="pushgrid admin API",
        version=__version__,
        description=DESCRIPTION,
        openapi_url=OPENAPI_URL,
        docs_url=None,  # served by add_docs: local assets, no persisted token
        redoc_url=None,
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
    )
    app.state.admin_settings = admin
    app.state.jmx_settings = jmx
    app.state.session_factory = factory
    app.state.job_runner = runner
    app.state.member_timeout = member_timeout
    app.state.answering = answering
    app.state.alert_runner = alerts
    app.state.slo_recorder = slo_recorder
    app.state.traces = traces
    app.state.history = history
    app.state.signin_settings = settings.signin
    app.state.signin = SignInState(settings.signin)  # lockout tables (ADR 052)
    app.state.oidc = OidcClient(settings.signin) if settings.signin.oidc_enabled else None
    app.state.canary_probes = probes
    # Brute-force protection of API tokens (docs/security.md), shared by every route.
    app.state.auth_throttle = AuthThrottle(
        monitoring.auth_failures_before_backoff, monitoring.auth_backoff_max
    )
    install(app)
    add_docs(app, DOCS_URL, OPENAPI_URL)
    app.include_router(api_router)
    app.include_router(signin_router)  # public: how a browser signs in (ADR 052)
    app.include_router(oidc_router)
    app.router.routes.append(metrics_route)  # public /metrics: pipeline freshness
    app.add_middleware(AuditMiddleware, session_factory=lambda: app.state.session_factory)
    app.add_middleware(SecurityHeaders)
    install_log_redaction(settings.alerts, admin)

    def openapi() -> dict[str, Any]:
        return _openapi(app)

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _members(app: FastAPI, admin: AdminSettings, jmx: JmxSettings) -> list[Any]:
    from .services.members import MemberService

    with app.state.session_factory() as db:
        return MemberService(db, admin, jmx).all()
