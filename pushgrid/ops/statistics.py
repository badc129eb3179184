"""What the console asks the admin API of the statistics store, said once for the console's
providers, the admin API's route and its service."""

from __future__ import annotations

from typing import Any

import msgspec


class TrendQuery(msgspec.Struct, frozen=True, kw_only=True):
    """One trend series: (scope, indicator, window) between ``since`` and ``until`` (Unix
    seconds, inclusive; None: open), as ``GET /api/v1/stats/trend`` takes it."""

    scope: str
    indicator: str
    window: str
    since: int | None = None
    until: int | None = None

    def params(self) -> dict[str, Any]:
        """The query parameters of ``GET /stats/trend`` (None: left out by the HTTP client)."""
        return msgspec.structs.asdict(self)
