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


@dataclass(frozen=True)
class Page:
    path: str  # relative to the console's prefix: "" for the Overview
    title: str
    icon: str
    layout: Callable[[], Component]
