"""A page's controls kept in the URL's query (issue 35 item 6): ``/console/trends?indicator=
connected_users&range=30+d`` opens the page as it was shared, and changing a control rewrites
the query (without a reload) so the address bar can be copied at any time.

A page declares its fields; :func:`register` wires its controls to the shell's
``dcc.Location`` (the Clients page, the subject browser and the alert history have their own,
with paging). A value the URL gives that the control does not offer is ignored:
the control keeps its default, the page never fails on a hand-edited link.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, urlencode

from dash import Dash, Input, Output, State, ctx, dcc, no_update
from dash.development.base_component import Component

from .ids import Ids

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


def url_store(page: str) -> Component:
    """The page's marker that it has read the URL (put it in the page's layout)."""
    return dcc.Store(id=f"{page}-url-read", data=False)


def register(app: Dash, page: str, fields: Sequence[UrlField]) -> None:
    """One callback, as the Clients page's: when the page is laid out (its marker still False)
    the address's query sets the controls, a shared link included; from then on a changed
    control rewrites the query (the shell's ``dcc.Location``, no reload)."""
    marker = f"{page}-url-read"

    @app.callback(
        Output(Ids.URL, "search", allow_duplicate=True),
        *(Output(f.component, "value", allow_duplicate=True) for f in fields),
        Output(marker, "data"),
        *(Input(f.component, "value") for f in fields),
        State(Ids.URL, "search"),
        State(marker, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def sync(*values: Any) -> tuple[Any, ...]:
        *shown, search, read_already = values
        return answer(fields, shown, search, bool(read_already), ctx.triggered_id)


def answer(
    fields: Sequence[UrlField],
    shown: Sequence[Any],
    search: str | None,
    read_already: bool,
    trigger: Any,
) -> tuple[Any, ...]:
    """The sync callback's outputs: the URL's query, each control's value, the marker.

    ``trigger`` is the control Dash says changed: a person's click, or any control of a page
    just laid out (Dash names the new controls then), whose values are still the defaults. A
    click before the page's first read came back (a loaded admin API: Dash then drops that
    read's answer and runs the callback again, the marker still False) therefore shows as a
    triggered control away from its default: that value is kept, the URL sets the other
    controls, and the query is written with the click in it.
    """
    unchanged = tuple(no_update for _ in fields)
    values = {f.key: v for f, v in zip(fields, shown, strict=True)}
    if read_already:
        new = write(values, fields)
        return (new if new != (search or "") else no_update), *unchanged, no_update
    wanted = read(search, fields)
    clicked = [f for f in fields if f.component == trigger and values[f.key] != f.default]
    for field in clicked:
        wanted[field.key] = values[field.key]
    new = write(wanted, fields) if clicked else (search or "")  # a shared link stays as it is
    return (
        new if new != (search or "") else no_update,
        *(
            wanted[f.key] if wanted[f.key] != value else no_update
            for f, value in zip(fields, shown, strict=True)
        ),
        True,
    )
