"""How the services reach a member: one small interface, two transports.

:class:`MemberAccess` is everything the member services need (read attributes, call an
operation). :class:`~admin_api.member_client.MemberClient` satisfies it over Jolokia;
:class:`JmxMember` over real JMX, for a member whose URL is ``service:jmx:rmi:///jndi/rmi://host:port/jmxrmi``
(usually the member's JMX bridge, ``pushgrid jmx``).

JMX cost: every :meth:`JmxMember.read` is ONE run of jmxquery's JVM (0.3-1 s wall, ~0.5 s CPU)
reading every attribute of the matching MBeans; the live page needs one per member and refresh.
Operations run ``java Bridge.java invoke`` (1-3 s: the source launcher compiles first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

import httpx
import msgspec

from pushgrid.kernel.jmxquery import JmxError, invoke, nest, query
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops import names
from pushgrid.ops.attributes import decode
from pushgrid.ops.attributes import names as attribute_names
from pushgrid.ops.indicator import WINDOW_LABELS, window_attribute

from .member_client import FailureKind, MemberClient, MemberEndpoint, MemberFailure, fits_contract

JMX_SCHEME: Final = "service:jmx:"
JMX_TIMEOUT: Final = 20.0  # JVM start-up on a busy machine, not a slow member
# The bridge's own MBean: read in the same JVM run, it says whether the values are live.
BRIDGE_MBEAN: Final = names.BRIDGE
_KINDS: Final[dict[str, FailureKind]] = {
    "unreachable": "unreachable",
    "timeout": "timeout",
    "auth": "auth",
}


class MemberAccess(Protocol):
    """What the member services call (Jolokia read/exec semantics)."""

    @property
    def member(self) -> MemberEndpoint: ...

    async def read(self, mbean: str, attributes: Sequence[str]) -> dict[str, Any]:
        """``{attribute: value}``; for a pattern ``{object name: {attribute: value}}``."""
        ...

    async def execute(self, mbean: str, operation: str, *arguments: Any) -> Any:
        """The operation's result (lists and maps decoded)."""
        ...


def is_jmx(url: str) -> bool:
    return url.strip().startswith(JMX_SCHEME)


def member_access(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberAccess:
    """The access for this member: JMX for a ``service:jmx:`` URL, else Jolokia."""
    if is_jmx(member.monitor_url):
        return JmxMember(member)
    return MemberClient(http, member)


V = TypeVar("V", bound=msgspec.Struct)


async def read_view(
    http: httpx.AsyncClient, member: MemberEndpoint, mbean: str, view: type[V]
) -> V:
    """The attributes of ``view`` (a part of an MBean's document in the ops contract) read from
    the member and decoded; an answer that does not fit is a 502 ``member_error`` naming the
    attribute (raises :class:`MemberFailure`)."""
    values = await member_access(http, member).read(mbean, attribute_names(view))
    with fits_contract(member):
        return decode(view, values, mbean)


def _is_pattern(mbean: str) -> bool:
    return "*" in mbean or "?" in mbean


def _windows(attributes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``Windows`` map rebuilt from the per-window scalars (``Max1m``, ``Count1m`` ...).

    The bridge serves ``Windows`` as TabularData, whose values jmxquery does not print.
    """
    return {
        window: {stat: attributes.get(window_attribute(stat, window)) for stat in WINDOW_LABELS}
        for window in WINDOW_NAMES
    }


def _pick(attributes: Mapping[str, Any], wanted: Sequence[str]) -> dict[str, Any]:
    out = {name: attributes[name] for name in wanted if name in attributes}
    if "Windows" in wanted and not isinstance(out.get("Windows"), dict):
        out["Windows"] = _windows(attributes)
    return out


class JmxMember:
    """A member read over JMX with jmxquery (see the module docstring for the cost)."""

    def __init__(self, member: MemberEndpoint, java: str = "java") -> None:
        self._member = member
        self.java = java

    @property
    def member(self) -> MemberEndpoint:
        return self._member

    @property
    def url(self) -> str:
        return self._member.monitor_url

    def _failure(self, exc: JmxError) -> MemberFailure:
        kind = _KINDS.get(exc.kind, "error")
        message = exc.message
        if kind == "auth":
            message += ": set JmxUsername/JmxPassword or the member's username/password"
        return MemberFailure(self._member, kind, f"JMX: {message}")

    async def read(self, mbean: str, attributes: Sequence[str]) -> dict[str, Any]:
        member = self._member
        try:
            readings = await query(
                self.url, [mbean, BRIDGE_MBEAN], member.username, member.password,
                java=self.java, seconds=JMX_TIMEOUT,
            )  # fmt: skip
        except JmxError as exc:
            raise self._failure(exc) from None
        by_bean = nest(readings)
        status = by_bean.pop(BRIDGE_MBEAN, None)
        if status is not None and status.get("Connected") is not True:
            raise MemberFailure(
                member,
                "unreachable",
                f"JMX bridge up, member unreachable behind it: {status.get('LastError')}",
            )
        if not by_bean:
            raise MemberFailure(
                member, "error", f"JMX: no readable {mbean} (is the member behind the bridge up?)"
            )
        if _is_pattern(mbean):
            return {name: _pick(values, attributes) for name, values in by_bean.items()}
        return _pick(next(iter(by_bean.values())), attributes)

    async def execute(self, mbean: str, operation: str, *arguments: Any) -> Any:
        member = self._member
        try:
            return await invoke(
                self.url, mbean, operation, arguments, member.username, member.password,
                java=self.java, seconds=JMX_TIMEOUT,
            )  # fmt: skip
        except JmxError as exc:
            raise self._failure(exc) from None
