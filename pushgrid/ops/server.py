"""The Server MBean (``pushgrid:type=Server``): identity, uptime, engine, totals, configuration.

``Configuration`` is the effective settings as the file names them with every value a scalar
(non-scalar settings such as ``Listen`` as their Python text, ``"['127.0.0.1:8800']"``): outside
clients read it that way, so it stays. ``Settings`` (added with this contract) is the same map
with a list setting as :func:`list_text` (``"127.0.0.1:8800, *:8801"``), which
:class:`SettingsView` decodes into a list. Not JSON: the JMX bridge's readers see every value
through jmxquery, which prints no arrays and does not escape a ``"`` inside a string (its output
stops being JSON), so the text holds neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final
from urllib.parse import quote, unquote

import msgspec

from .attributes import MAP, STRING, java

Scalar = str | int | float | bool | None
#: kept as they are in a list item; everything else (``,``, ``"``, ``\\``, ``%``, spaces) is
#: percent-encoded, so ``", "`` separates items and the text is safe for jmxquery
_ITEM_SAFE: Final = "/:@[]*=+!$&'()~;?#"
SEPARATOR: Final = ", "


def list_text(items: Sequence[str]) -> str:
    """A list setting as ``Settings`` carries it: items percent-encoded, joined by ``", "``."""
    return SEPARATOR.join(quote(item, safe=_ITEM_SAFE) for item in items)


def text_list(text: str) -> list[str]:
    """The inverse of :func:`list_text` (an empty text is an empty list)."""
    return [unquote(item) for item in text.split(SEPARATOR)] if text else []


class ServerDocument(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """Every attribute of the Server MBean, in its order."""

    server_name: Annotated[str, java(STRING, "ServerName setting")]
    version: Annotated[str, java(STRING, "pushgrid version")]
    uptime: Annotated[float, java("double", "Seconds since start")]
    start_time: Annotated[int, java("long", "Start time, ms since the Unix epoch")]
    engine: Annotated[str, java(STRING, "Message engine")]
    delivery_mode: Annotated[str, java(STRING, "Cluster delivery mode")]
    connected_users: Annotated[int, java("long", "Connected users (sessions)")]
    subscriptions: Annotated[int, java("long", "Active subscriptions")]
    counters: Annotated[dict[str, int], java(MAP, "Cumulative totals since start")]
    configuration: Annotated[dict[str, Scalar], java(MAP, "Effective settings (secrets hidden)")]
    settings: Annotated[
        dict[str, Any],
        java(MAP, "Effective settings, a list as comma-separated text (secrets hidden)"),
    ]


class SettingsView(msgspec.Struct, frozen=True, kw_only=True):
    """The settings the admin API needs of a member (decoded from ``Settings``)."""

    listen_text: str = msgspec.field(name="Listen", default="")
    entitlement: str | None = msgspec.field(name="Entitlement", default=None)

    @property
    def listen(self) -> list[str]:
        """The ``Listen`` addresses (``host:port``), in order."""
        return text_list(self.listen_text)


class ServerIdentity(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """What the admin API's member view reads of the Server MBean."""

    server_name: str
    version: str
    uptime: float
    start_time: int
    engine: str
    delivery_mode: str
    connected_users: int
    subscriptions: int
    settings: SettingsView


class ServerSettingsView(msgspec.Struct, rename="pascal", frozen=True):
    """A ``read`` of the one ``Settings`` attribute."""

    settings: SettingsView


class ServerTotals(msgspec.Struct, rename="pascal", frozen=True):
    """What the alert signals read: the start time (a restart) and the counters."""

    start_time: int
    delivery_mode: str
    counters: dict[str, int]
