"""The console's pages: each module has ``PATH``, ``TITLE``, ``layout()`` and ``register()``.

``register(app, providers)`` adds the page's callbacks. Callbacks are thin: they turn the JSON
Dash hands them into typed values, call a plain function (``render_*``, unit-tested) and turn its
result back into components or JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dash.development.base_component import Component
from dash.exceptions import PreventUpdate

from ..provider import ConsoleProvider

ProviderFactory = Callable[[str], ConsoleProvider]


@dataclass(frozen=True)
class Providers:
    """Makes the provider of the signed-in operator (from the token the browser holds)."""

    factory: ProviderFactory

    def __call__(self, token: str | None) -> ConsoleProvider:
        if not token:
            raise PreventUpdate  # not signed in: the shell shows the login page
        return self.factory(token)


#: the navigation's groups, in order (a group's tab opens its first page; issue 34: eleven
#: pages in one row did not fit 1440 px)
GROUPS: tuple[str, ...] = ("Live", "Traffic", "Pipeline", "Admin")
#: the admin API's roles, weakest first (admin_api/security.py Role)
ROLES: tuple[str, ...] = ("viewer", "operator", "admin")
#: the class of a control only an operator (or admin) may use: hidden from a viewer
OPERATOR_ONLY = "needs-operator"


@dataclass(frozen=True)
class ConsolePage:
    path: str  # relative to the console's prefix: "" for the Overview
    title: str
    icon: str
    layout: Callable[[], Component]
    group: str = "Live"
    role: str = "viewer"  # the weakest role the page's reads need (it is not offered below)

    def allows(self, role: str | None) -> bool:
        """The page is offered to ``role`` (an unknown role: a viewer)."""
        have = ROLES.index(role) if role in ROLES else 0
        return have >= ROLES.index(self.role)
