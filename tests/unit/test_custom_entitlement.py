"""Custom entitlement (plug-in) decisions: cache, timeout, failures; the publish guard's rules."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from pushgrid.kernel.throttle import TokenBucket
from pushgrid.metrics.counters import Counters
from pushgrid.protocol.errors import ErrorCode
from pushgrid.server.core.custom_entitlement import CustomEntitlement, PluginError, load_plugin
from pushgrid.server.core.entitlement import ALLOW_ALL, Grant, JwtEntitlement
from pushgrid.server.core.hub import Hub
from pushgrid.server.core.publishing import (
    Admission,
    Publisher,
    PublishGuard,
    PublishLimits,
    Refusal,
)
from pushgrid.server.engine.base import PublishRequest, SnapshotBounds
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.engine.memory import MemoryEngine


class Plugin:
    """Allows subjects under /ok/ to the token 'good'; counts its calls."""

    def __init__(self, delay: float = 0.0, answer: object = None, fail: bool = False) -> None:
        self.calls: list[tuple[str, str | None, str, list[str]]] = []
        self.delay = delay
        self.answer = answer
        self.fail = fail

    async def _decide(
        self, action: str, token: str | None, address: str, subjects: list[str]
    ) -> Sequence[bool]:
        self.calls.append((action, token, address, subjects))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError("directory down")
        if self.answer is not None:
            return self.answer  # type: ignore[return-value]
        return [token == "good" and s.startswith("/ok/") for s in subjects]

    async def authorize_subscribe(
        self, token: str | None, address: str, subjects: list[str]
    ) -> Sequence[bool]:
        return await self._decide("subscribe", token, address, subjects)

    async def authorize_publish(
        self, token: str | None, address: str, subjects: list[str]
    ) -> Sequence[bool]:
        return await self._decide("publish", token, address, subjects)


async def test_decisions_are_asked_with_token_address_and_subjects_then_cached() -> None:
    plugin = Plugin()
    entitlement = CustomEntitlement(plugin, timeout=1.0, cache_time=60.0)
    grant = entitlement.grant("good")
    denials = await entitlement.subscribe_denials(grant, "10.1.2.3:4567", ["/ok/a", "/no/b"])
    assert denials == [None, "denied by the entitlement plug-in"]
    assert plugin.calls == [("subscribe", "good", "10.1.2.3", ["/ok/a", "/no/b"])]
    # Cached: asked again, only the new subject goes to the plug-in.
    await entitlement.subscribe_denials(grant, "10.1.2.3:9999", ["/ok/a", "/ok/c"])
    assert plugin.calls[-1] == ("subscribe", "good", "10.1.2.3", ["/ok/c"])
    assert await entitlement.publish_denial(grant, "10.1.2.3:1", "/ok/a") is None
    actions = [call[0] for call in plugin.calls]
    assert actions == ["subscribe", "subscribe", "publish"]  # cached apart
    # Another token is another decision.
    other = entitlement.grant("bad")
    assert await entitlement.publish_denial(other, "10.1.2.3:1", "/ok/a") is not None


@pytest.mark.parametrize(
    "plugin",
    [Plugin(delay=5.0), Plugin(fail=True), Plugin(answer=[True, True, True]), Plugin(answer="y")],
    ids=["timeout", "exception", "wrong-count", "not-a-list"],
)
async def test_a_failing_plugin_denies_and_is_not_cached(
    plugin: Plugin, caplog: pytest.LogCaptureFixture
) -> None:
    entitlement = CustomEntitlement(plugin, timeout=0.05, cache_time=60.0, name="t")
    grant = entitlement.grant("good")
    assert await entitlement.subscribe_denials(grant, "1.2.3.4:5", ["/ok/a"]) == [
        "denied by the entitlement plug-in"
    ]
    await entitlement.subscribe_denials(grant, "1.2.3.4:5", ["/ok/a"])
    assert len(plugin.calls) == 2  # asked again: a failure is not a decision
    assert "entitlement plug-in t" in caplog.text
    assert "Traceback" not in caplog.text


def test_unknown_plugin_names_the_group() -> None:
    with pytest.raises(PluginError, match=r"pushgrid\.entitlement"):
        load_plugin("no-such-plugin")


class Throttle(PublishGuard):
    """The guard with a fake rate: refuses every publish once ``full``."""

    full = False

    def rate(self, host: str, bucket: TokenBucket | None) -> Refusal | None:
        if self.full:
            return Refusal(ErrorCode.RATE_LIMITED, "slow down")
        return None


async def test_one_admission_path_rules_in_order_then_the_engine_bounds() -> None:
    """Address, meta-subject, entitlement, rate, then the engine's own snapshot bounds
    (guarantee 8); every refusal counted once, an accepted message counted in."""
    engine = MemoryEngine(EngineLimits(bounds=SnapshotBounds(max_fields=2, max_bytes=1024)))
    hub = Hub(engine, Counters())
    guard = Throttle(PublishLimits())
    admission = Admission(guard, JwtEntitlement("k" * 32, ["HS256"]), hub)
    anyone = ALLOW_ALL
    nobody = Grant(subscribe=(), publish=(), valid=False, reason="bad token")

    def publisher(grant: Grant = anyone, may_publish: bool = True) -> Publisher:
        return Publisher("10.0.0.1:5", "10.0.0.1", grant, may_publish)

    def request(subject: str, fields: dict[str, str]) -> PublishRequest:
        return PublishRequest(subject, "c", fields)

    async def code(who: Publisher, what: PublishRequest) -> ErrorCode | None:
        outcome = await admission.publish(who, what)
        return outcome.code if isinstance(outcome, Refusal) else None

    ok = request("/s/x", {"a": "1"})
    assert await code(publisher(nobody, may_publish=False), ok) is ErrorCode.DENIED
    assert await code(publisher(nobody), request("/pushgrid/n/overview", {})) is (
        ErrorCode.RESERVED_SUBJECT
    )
    assert await code(publisher(nobody), ok) is ErrorCode.DENIED
    guard.full = True
    assert await code(publisher(), ok) is ErrorCode.RATE_LIMITED
    guard.full = False
    assert await code(publisher(), ok) is None
    assert await code(publisher(), request("/s/x", {"b": "2", "c": "3"})) is (
        ErrorCode.TOO_MANY_FIELDS
    )
    assert await code(publisher(), request("/s/x", {"b": "x" * 2000})) is (
        ErrorCode.SNAPSHOT_TOO_LARGE
    )
    assert hub.counters.publish_rejected_total == 6
    assert hub.counters.messages_in_total == 1
    assert guard.reserved("/pushgridx/a") is None
