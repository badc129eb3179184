"""The Server MBean (``pushgrid:type=Server``): identity, uptime, engine, totals, configuration.

``Configuration`` is the effective settings as the file names them with every value a scalar
(non-scalar settings such as ``Listen`` as their Python text, ``"['127.0.0.1:8800']"``): outside
clients read it that way, so it stays. ``Settings`` (added with this contract) is the same map
with non-scalar values as JSON text (``"[\"127.0.0.1:8800\"]"``): a list cannot cross the JMX
bridge (jmxquery prints no arrays), text can, and JSON has one decoder. :class:`SettingsView`
decodes it into typed values.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from .attributes import MAP, STRING, java

Scalar = str | int | float | bool | None


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
        java(MAP, "Effective settings, non-scalar values as JSON text (secrets hidden)"),
    ]


class SettingsView(msgspec.Struct, frozen=True, kw_only=True):
    """The settings the admin API needs of a member (decoded from ``Settings``)."""

    listen_json: str = msgspec.field(name="Listen", default="[]")
    entitlement: str | None = msgspec.field(name="Entitlement", default=None)

    def __post_init__(self) -> None:
        self.listen  # noqa: B018 - a Listen that is not a JSON list of text fails the decode

    @property
    def listen(self) -> list[str]:
        """The ``Listen`` addresses (``host:port``), in order."""
        try:
            return msgspec.json.decode(self.listen_json, type=list[str])
        except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
            raise ValueError(f"Listen is not a JSON list of addresses: {exc}") from None


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


class ServerSettings(msgspec.Struct, rename="pascal", frozen=True):
    """A ``read`` of the one ``Settings`` attribute."""

    settings: SettingsView


class ServerTotals(msgspec.Struct, rename="pascal", frozen=True):
    """What the alert signals read: the start time (a restart) and the counters."""

    start_time: int
    counters: dict[str, int]
