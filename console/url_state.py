"""A page's controls kept in the URL's query (issue 35 item 6): ``/console/trends?indicator=
connected_users&range=30+d`` opens the page as it was shared, and changing a control rewrites
the query (without a reload) so the address bar can be copied at any time.

A page declares its fields; :func:`register` wires two callbacks between the page's own
``dcc.Location`` and its controls (the Clients page, the subject browser and the alert history
have their own, with paging). A value the URL gives that the control does not offer is ignored:
the control keeps its default, the page never fails on a hand-edited link.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, urlencode

from dash import Dash, Input, Output, State, dcc, no_update
from dash.development.base_component import Component

MAX_TEXT: Final = 200  # a free-text field's value from a URL is cut here


@dataclass(frozen=True)
class UrlField:
    key: str  # the query parameter
    component: str  # the control's id (its ``value``)
    default: Any
    allowed: Collection[Any] | None = None  # None: free text


def _parse(field: UrlField, text: str) -> Any:
    if field.allowed is None:
        return text.strip()[:MAX_TEXT]
    for choice in field.allowed:  # the control's own value (an int stays an int)
        if str(choice) == text:
            return choice
    return field.default


def read(search: str | None, fields: Sequence[UrlField]) -> dict[str, Any]:
    """The controls' values the URL's ``?...`` gives (absent or not offered: the default)."""
    given = {k: v[0] for k, v in parse_qs((search or "").lstrip("?")).items()}
    return {f.key: _parse(f, given[f.key]) if f.key in given else f.default for f in fields}


def write(values: Mapping[str, Any], fields: Sequence[UrlField]) -> str:
    """The URL's ``?...`` for the controls' values (defaults left out: a plain link stays
    plain)."""
    given = {f.key: values[f.key] for f in fields if values.get(f.key) not in (f.default, None, "")}
    return f"?{urlencode(given)}" if given else ""


def location(page: str) -> Component:
    """The page's own ``dcc.Location`` (put it in the page's layout)."""
    return dcc.Location(id=f"{page}-url", refresh=False)


def register(app: Dash, page: str, fields: Sequence[UrlField]) -> None:
    """URL -> controls when the page opens (or the browser goes back), controls -> URL when
    the operator changes one."""
    url = f"{page}-url"

    @app.callback(
        *(Output(f.component, "value", allow_duplicate=True) for f in fields),
        Input(url, "search"),
        *(State(f.component, "value") for f in fields),
        prevent_initial_call="initial_duplicate",
    )
    def from_url(search: str | None, *shown: Any) -> tuple[Any, ...]:
        wanted = read(search, fields)
        return tuple(
            wanted[f.key] if wanted[f.key] != value else no_update
            for f, value in zip(fields, shown, strict=True)
        )

    @app.callback(
        Output(url, "search"),
        *(Input(f.component, "value") for f in fields),
        State(url, "search"),
        prevent_initial_call=True,
    )
    def to_url(*values: Any) -> Any:
        *chosen, search = values
        new = write({f.key: v for f, v in zip(fields, chosen, strict=True)}, fields)
        return new if new != (search or "") else no_update
