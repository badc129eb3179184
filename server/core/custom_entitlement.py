"""``Entitlement = custom:NAME``: a Python plug-in decides who may subscribe and publish.

A plug-in is an object found through the entry point ``NAME`` of the group
``pushgrid.entitlement`` (a class or a zero-argument factory, called once at start-up) with two
coroutine methods, each answering one bool per subject, in order::

    async def authorize_subscribe(self, token: str | None, address: str,
                                  subjects: list[str]) -> list[bool]
    async def authorize_publish(self, token: str | None, address: str,
                                subjects: list[str]) -> list[bool]

``address`` is the client's IP address. A call that takes longer than
EntitlementCustomTimeout, raises, or answers the wrong number of decisions denies (fail
closed) and logs one line. Decisions are cached per (token, address, action, subject) for
EntitlementCustomCacheTime seconds. docs/security.md documents the interface;
deploy/entitlement-example/ is a working plug-in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol, runtime_checkable

from pushgrid.kernel.throttle import host_of
from pushgrid.protocol.exceptions import PushgridError

from .entitlement import Entitlement, Grant

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "pushgrid.entitlement"
MAX_CACHED_DECISIONS = 100_000
Action = Literal["subscribe", "publish"]


@runtime_checkable
class EntitlementPlugin(Protocol):
    async def authorize_subscribe(
        self, token: str | None, address: str, subjects: list[str]
    ) -> Sequence[bool]: ...

    async def authorize_publish(
        self, token: str | None, address: str, subjects: list[str]
    ) -> Sequence[bool]: ...


class PluginError(PushgridError):
    """The plug-in named in ``Entitlement = custom:NAME`` cannot be loaded."""

    code = "plugin"


def load_plugin(name: str) -> EntitlementPlugin:
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        known = ", ".join(sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)))
        raise PluginError(
            f"Entitlement = custom:{name}: no entry point {name!r} in group "
            f"{ENTRY_POINT_GROUP!r} (installed: {known or 'none'})"
        )
    try:
        factory: Any = found[0].load()
        plugin = factory()
    except Exception as exc:
        raise PluginError(f"Entitlement = custom:{name}: cannot load the plug-in: {exc}") from exc
    if not isinstance(plugin, EntitlementPlugin):
        raise PluginError(
            f"Entitlement = custom:{name}: {found[0].value} has no async authorize_subscribe "
            "and authorize_publish methods"
        )
    return plugin


class CustomEntitlement(Entitlement):
    def __init__(
        self, plugin: EntitlementPlugin, timeout: float, cache_time: float, name: str = ""
    ) -> None:
        self.plugin = plugin
        self.timeout = timeout
        self.cache_time = cache_time
        self.name = name
        self._cache: dict[tuple[str | None, str, Action, str], tuple[bool, float]] = {}

    def grant(self, token: str | None) -> Grant:
        # The plug-in decides per subject; the grant only carries the token to it.
        return Grant(("*",), ("*",), token=token)

    async def subscribe_denials(
        self, grant: Grant, remote: str, subjects: Sequence[str]
    ) -> list[str | None]:
        decisions = await self._decide("subscribe", grant.token, host_of(remote), subjects)
        return [None if ok else "denied by the entitlement plug-in" for ok in decisions]

    async def publish_denial(self, grant: Grant, remote: str, subject: str) -> str | None:
        (ok,) = await self._decide("publish", grant.token, host_of(remote), [subject])
        return None if ok else "denied by the entitlement plug-in"

    async def _decide(
        self, action: Action, token: str | None, address: str, subjects: Sequence[str]
    ) -> list[bool]:
        now = time.monotonic()
        decisions: dict[str, bool] = {}
        for subject in subjects:
            cached = self._cache.get((token, address, action, subject))
            if cached is not None and cached[1] > now:
                decisions[subject] = cached[0]
        ask = [s for s in dict.fromkeys(subjects) if s not in decisions]
        if ask:
            answers = await self._ask(action, token, address, ask)
            expiry = now + self.cache_time
            if len(self._cache) + len(ask) > MAX_CACHED_DECISIONS:
                self._cache.clear()
            for subject, ok in zip(ask, answers, strict=True):
                decisions[subject] = ok
                if self.cache_time > 0 and not isinstance(answers, _Denials):
                    self._cache[(token, address, action, subject)] = (ok, expiry)
        return [decisions[subject] for subject in subjects]

    async def _ask(
        self, action: Action, token: str | None, address: str, subjects: list[str]
    ) -> list[bool]:
        method = (
            self.plugin.authorize_subscribe
            if action == "subscribe"
            else self.plugin.authorize_publish
        )
        try:
            answer = await asyncio.wait_for(method(token, address, list(subjects)), self.timeout)
        except TimeoutError:
            log.warning("entitlement plug-in %s: %s timed out: denied", self.name, action)
            return _deny(len(subjects))
        except Exception as exc:  # a plug-in bug must deny, not take the session down
            log.warning("entitlement plug-in %s: %s failed: %r: denied", self.name, action, exc)
            return _deny(len(subjects))
        decisions = list(answer) if isinstance(answer, list | tuple) else []
        if len(decisions) != len(subjects) or not all(type(d) is bool for d in decisions):
            log.warning(
                "entitlement plug-in %s: %s answered %r for %d subjects: denied",
                self.name,
                action,
                answer,
                len(subjects),
            )
            return _deny(len(subjects))
        return decisions


class _Denials(list[bool]):
    """A failed plug-in call's answer: denies, and is never cached."""


def _deny(count: int) -> list[bool]:
    return _Denials([False] * count)
