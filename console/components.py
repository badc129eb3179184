"""Small building blocks shared by the pages: alerts, cards, pills, tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dash import dcc, html
from dash.development.base_component import Component

from .provider import ProviderError

Child = Component | str


def attrs(values: Mapping[str, object]) -> dict[str, Any]:
    """Extra attributes (``data-*``) of a component, typed for ``**`` expansion."""
    return {key: value if isinstance(value, str) else str(value) for key, value in values.items()}


def alert(errors: Sequence[ProviderError | str] = (), level: str = "error") -> list[Component]:
    """The alert area's children: one box per problem (nothing when there is none)."""
    boxes: list[Component] = []
    for error in errors:
        if isinstance(error, ProviderError):
            title = f"{error.title}" + (f" (HTTP {error.status})" if error.status else "")
            hint = (
                " The admin API refused the token: sign out and sign in again."
                if error.unauthorized
                else ""
            )
            body: list[Child] = [html.Strong(title), html.Span(f" {error.detail}{hint}")]
            status = str(error.status)
        else:
            body = [html.Span(error)]
            status = ""
        boxes.append(
            html.Div(
                body,
                className=f"alert alert-{level}",
                role="alert",
                **attrs({"data-status": status}),
            )
        )
    return boxes


def notice(text: str, level: str = "info") -> list[Component]:
    return [html.Div(text, className=f"alert alert-{level}", role="status")]


def pill(text: str, kind: str) -> html.Span:
    """A colored status label: kind is good, warn, bad, info or muted."""
    return html.Span(text, className=f"pill pill-{kind}")


def card(children: Sequence[Child] | Child, class_name: str = "", **props: Any) -> html.Div:
    return html.Div(children, className=f"card {class_name}".strip(), **props)


def table(
    header: Sequence[Child],
    rows: Sequence[Sequence[Child]],
    class_name: str = "",
    row_props: Sequence[dict[str, Any]] | None = None,
    empty: str = "nothing to show",
) -> html.Table:
    """A plain HTML table; ``row_props`` gives each row's extra attributes (data-*)."""
    body: list[Component] = []
    for index, row in enumerate(rows):
        extra = row_props[index] if row_props is not None else {}
        body.append(html.Tr([html.Td(cell) for cell in row], **extra))
    if not rows:
        body.append(html.Tr([html.Td(empty, colSpan=len(header), className="empty")]))
    return html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in header])), html.Tbody(body)],
        className=f"grid-table {class_name}".strip(),
    )


def page_header(title: str, subtitle: str, *actions: Child) -> html.Div:
    return html.Div(
        [
            html.Div([html.H1(title), html.P(subtitle, className="subtitle")]),
            html.Div(list(actions), className="page-actions"),
        ],
        className="page-header",
    )


#: the scope a page of the operators shows first: the members summed
CLUSTER_SCOPE = "cluster"


def scope_dropdown(component_id: str) -> dcc.Dropdown:
    """The cluster-or-member picker of the hot and watched subjects pages (its options, the
    members, come with the page's data)."""
    return dcc.Dropdown(
        id=component_id,
        value=CLUSTER_SCOPE,
        clearable=False,
        options=[{"label": CLUSTER_SCOPE, "value": CLUSTER_SCOPE}],
        style={"minWidth": "12rem"},
    )


def scope_options(document: Mapping[str, Any]) -> list[dict[str, str]]:
    """The scope picker's options for a per-member answer (``members: [{member, ...}]``)."""
    scopes = [CLUSTER_SCOPE, *(str(m["member"]) for m in document.get("members", []))]
    return [{"label": s, "value": s} for s in scopes]


def unreachable_members(document: Mapping[str, Any]) -> list[Component]:
    """A warning naming the members a per-member answer could not read (none: all read)."""
    down = [
        f"{m['member']}: {m.get('error')}"
        for m in document.get("members", [])
        if not m.get("reachable")
    ]
    return alert(down, "warn")
