"""The admin API's per-second history (``GET /stats/history``): every member's samples and their
cluster sums, as the Overview's charts draw them."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, Field

CLUSTER: Final = "cluster"
MAX_UNIX: Final = 253402300799  # 9999-12-31T23:59:59Z

UnixSeconds = Annotated[int, Field(ge=0, le=MAX_UNIX, description="Unix seconds (UTC)")]
IndicatorName = Literal[
    "connected_users",
    "connections_per_second",
    "disconnections_per_second",
    "incoming_messages_per_second",
    "outgoing_messages_per_second",
    "incoming_bytes_per_second",
    "outgoing_bytes_per_second",
]


class HistorySeriesOut(BaseModel):
    """One scope's per-second samples: the seconds held (ascending) and each indicator's
    values at those seconds (null: the member did not report that indicator then)."""

    scope: str = Field(description="`cluster` or a member's name")
    seconds: list[int] = Field(description="Unix seconds with a sample; a gap is a missing one")
    values: dict[str, list[float | None]] = Field(description="indicator -> one value a second")


class HistoryOut(BaseModel):
    since: UnixSeconds
    until: UnixSeconds
    retention: int = Field(description="Seconds the admin API keeps (Admin.HistorySeconds)")
    indicators: list[IndicatorName]
    cluster: HistorySeriesOut = Field(
        description="Each second's sum over the members that sampled it; it ends at the newest "
        "second every member read in the last 5 s has reported"
    )
    members: list[HistorySeriesOut]

    def scope(self, name: str) -> HistorySeriesOut | None:
        """The series of ``name`` (a member, or ``cluster``); None: the history has none."""
        if name == CLUSTER:
            return self.cluster
        return next((series for series in self.members if series.scope == name), None)
