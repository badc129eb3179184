"""Custom entitlement (plug-in) decisions: cache, timeout, failures; the publish guard's rules."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from pushgrid.protocol.errors import ErrorCode
from pushgrid.server.core.custom_entitlement import CustomEntitlement, PluginError, load_plugin
from pushgrid.server.core.publishing import PublishGuard, PublishLimits
from pushgrid.server.engine.base import Snapshot


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


class Engine:
    def __init__(self, fields: dict[str, str]) -> None:
        self.fields = fields

    async def snapshot(self, subject: str) -> Snapshot | None:
        return Snapshot(subject, "c", dict(self.fields), "e", 1, 0)


async def test_guard_rules() -> None:
    limits = PublishLimits(max_fields_per_subject=2, max_snapshot_size=100)
    guard = PublishGuard(limits, Engine({"a": "1"}))
    assert guard.reserved("/pushgrid/node/overview") is not None
    assert guard.reserved("/pushgridx/a") is None
    assert await guard.snapshot_bounds("/s/x", "c", {"b": "2"}, True) is None
    refusal = await guard.snapshot_bounds("/s/x", "c", {"b": "2", "c": "3"}, True)
    assert refusal is not None
    assert refusal.code is ErrorCode.TOO_MANY_FIELDS
    refusal = await guard.snapshot_bounds("/s/x", "c", {"a": "x" * 200}, True)
    assert refusal is not None
    assert refusal.code is ErrorCode.SNAPSHOT_TOO_LARGE
    # Not retained, or no fields: the snapshot does not grow by this publish.
    assert await guard.snapshot_bounds("/s/x", "c", {"b": "2", "c": "3"}, False) is None
    assert await guard.snapshot_bounds("/s/x", "c" * 1000, {}, True) is None
