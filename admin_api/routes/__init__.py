"""The routes, one module per resource, gathered under ``/api/v1`` by :data:`api_router`.

Every router uses ``route_class=GuardedRoute`` and every route declares its role
(``principal: Viewer | Operator | Admin``); a route's OpenAPI summary is the first sentence of
its docstring and its operation id its name (``members.register``, the audit log's action).
The sign-in routes (``signin.py``, ``/api/v1/auth``) are the exception: public, they are how a
browser gets in, and ``admin_api/main.py`` includes them on their own.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute

from ..deps import GuardedRoute
from . import (
    accounting,
    alert_silences,
    alerts,
    audit,
    canaries,
    cluster,
    delivery,
    history,
    hot,
    jobs,
    live,
    me,
    member_names,
    members,
    occupancy,
    sessions,
    slos,
    statistics,
    subject_browser,
    subjects,
    tokens,
    trace,
    users,
    watched,
)

API_PREFIX = "/api/v1"
ROUTERS = (
    me,
    members,
    member_names,
    cluster,
    live,
    history,
    statistics,
    subjects,
    occupancy,
    sessions,
    jobs,
    audit,
    tokens,
    hot,
    alerts,
    alert_silences,
    trace,
    watched,
    users,
    canaries,
    subject_browser,
    delivery,
    slos,
    accounting,
)


def _summary(description: str) -> str:
    """The first sentence of a route's docstring."""
    paragraph = " ".join(description.strip().split("\n\n")[0].split())
    return paragraph.split(". ")[0].rstrip(".")


api_router = APIRouter(prefix=API_PREFIX, route_class=GuardedRoute)
for module in ROUTERS:
    for route in module.router.routes:
        if isinstance(route, APIRoute) and route.summary is None and route.description:
            route.summary = _summary(route.description)
    api_router.include_router(module.router)
