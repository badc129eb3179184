"""An example pushgrid entitlement plug-in (``Entitlement = custom:example``).

The token is an opaque API key; a table maps each key to the subject prefixes it may read and
write. A real plug-in would ask a directory or an HTTP service here (asynchronously: the
server waits at most EntitlementCustomTimeout seconds and caches each decision for
EntitlementCustomCacheTime). Keys come from the file named by EXAMPLE_ENTITLEMENT_KEYS (JSON:
``{"key": {"sub": ["/prefix/"], "pub": ["/prefix/"]}}``); the key ``slow`` sleeps 60 s to show
the timeout, and publishing is refused from addresses outside 127.0.0.0/8.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
from pathlib import Path

_LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


class ExampleEntitlement:
    def __init__(self) -> None:
        path = os.environ.get("EXAMPLE_ENTITLEMENT_KEYS")
        self.keys: dict[str, dict[str, list[str]]] = (
            json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
        )
        self.calls = 0

    async def authorize_subscribe(
        self, token: str | None, address: str, subjects: list[str]
    ) -> list[bool]:
        return await self._decide(token, "sub", subjects)

    async def authorize_publish(
        self, token: str | None, address: str, subjects: list[str]
    ) -> list[bool]:
        if ipaddress.ip_address(address) not in _LOOPBACK:
            return [False] * len(subjects)
        return await self._decide(token, "pub", subjects)

    async def _decide(self, token: str | None, action: str, subjects: list[str]) -> list[bool]:
        self.calls += 1
        if token == "slow":
            await asyncio.sleep(60)
        prefixes = self.keys.get(token or "", {}).get(action, [])
        return [any(subject.startswith(p) for p in prefixes) for subject in subjects]
