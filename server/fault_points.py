"""Test-only fault points (ADR 049). Nothing here runs unless a test setting turns it on.

``Test.WedgeDeliveryFile`` (docs/configuration.md): while the named file exists, the member's
engine delivery callback discards every message, as a wedged delivery task would (the silent
failure of issue 33 item 8a: publishes are still accepted and acknowledged, subscribers get
nothing). Without the setting the engine is handed the hub's ``deliver`` itself: production pays
nothing, not even a check.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from .engine.base import Deliver, Published

log = logging.getLogger(__name__)

WEDGE_CHECK_PERIOD = 0.2  # seconds between two looks at the file


class DeliveryWedge:
    """Discards deliveries while ``path`` exists (looked at every ``WEDGE_CHECK_PERIOD``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.wedged = False
        self.discarded = 0

    def wrap(self, deliver: Deliver) -> Deliver:
        def wedged_or_deliver(message: Published) -> None:
            if self.wedged:
                self.discarded += 1
                return
            deliver(message)

        return wedged_or_deliver

    async def watch(self) -> None:
        while True:
            wedged = self.path.exists()
            if wedged != self.wedged:
                log.warning("TEST FAULT: delivery %s", "wedged" if wedged else "released")
                self.wedged = wedged
            await asyncio.sleep(WEDGE_CHECK_PERIOD)
