"""The member panel (issue 21 item 8), one type from the probe to the console.

:class:`MemberPanel` is what the probe builds once a second (metrics/member_panel.py), what the
MBean ``pushgrid:type=MemberPanel`` serves as ``Panel``, what the admin API's member view carries
(its ``MemberPanelOut`` schema is this model under the name the OpenAPI document has always used)
and what the console's member card reads. How each number is computed: docs/monitoring.md,
"Member panel". :class:`PanelAttributes` is the MBean: one attribute per number plus ``Panel``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final

import msgspec
from pydantic import BaseModel, ConfigDict, Field

from .attributes import MAP, java


class MemberPanel(BaseModel):
    """The member's operator panel (MBean ``pushgrid:type=MemberPanel``; docs/monitoring.md,
    "Member panel"). Window numbers cover the last ``window_seconds``; null: not measured yet
    or not applicable (``replica_lag_max`` without a JetStream stream)."""

    model_config = ConfigDict(frozen=True)

    window_seconds: float
    cpu_percent: float | None = Field(description="Process CPU over the last second, % of one core")
    cpu_seconds_total: float
    rss_bytes: int = Field(ge=0, description="Resident set size")
    open_files: int = Field(ge=0)
    max_open_files: int = Field(ge=0, description="Soft open-file limit (0: unlimited)")
    loop_lag_seconds: float | None = Field(description="How late the last 1 s probe sleep ended")
    loop_lag_max_seconds: float | None
    flush_delay_p50_seconds: float | None
    flush_delay_p99_seconds: float | None
    flushes_window: int = Field(ge=0)
    slow_consumers_window: int = Field(ge=0)
    slow_consumers_total: int = Field(ge=0)
    replica_lag_max: int | None = Field(description="Largest JetStream replica lag (records)")

    @property
    def open_files_ratio(self) -> float | None:
        """Open files as a fraction of the limit (None when unlimited)."""
        return self.open_files / self.max_open_files if self.max_open_files > 0 else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe, in field order: an infinite quantile (past the last bucket) reads as None."""
        return {key: _finite(value) for key, value in self.__dict__.items()}


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _double(description: str) -> Any:
    return java("double", description)


#: the attribute holding the whole panel as one map (what the admin API reads)
PANEL_ATTRIBUTE: Final = "Panel"


class PanelAttributes(msgspec.Struct, frozen=True, kw_only=True):
    """The MemberPanel MBean: its attributes in order, each field named as the panel's number."""

    cpu_percent: Annotated[
        float | None, _double("Process CPU, percent of one core, over the last second")
    ] = msgspec.field(name="CpuPercent")
    cpu_seconds_total: Annotated[
        float, _double("Process CPU seconds (user + system) since start")
    ] = msgspec.field(name="CpuSeconds")
    rss_bytes: Annotated[int, java("long", "Resident set size (bytes)")] = msgspec.field(
        name="ResidentBytes"
    )
    open_files: Annotated[
        int, java("long", "Open file descriptors (connections, files, pipes)")
    ] = msgspec.field(name="OpenFiles")
    max_open_files: Annotated[int, java("long", "Soft open-file limit (0: unlimited)")] = (
        msgspec.field(name="MaxOpenFiles")
    )
    loop_lag_seconds: Annotated[
        float | None, _double("Seconds the last 1 s probe sleep ended late")
    ] = msgspec.field(name="EventLoopLag")
    loop_lag_max_seconds: Annotated[
        float | None, _double("Largest event-loop lag over the window")
    ] = msgspec.field(name="EventLoopLagMax")
    flush_delay_p50_seconds: Annotated[
        float | None, _double("Median flush delay over the window (s)")
    ] = msgspec.field(name="FlushDelayP50")
    flush_delay_p99_seconds: Annotated[
        float | None, _double("99th percentile flush delay over the window (s)")
    ] = msgspec.field(name="FlushDelayP99")
    flushes_window: Annotated[int, java("long", "Flushes observed over the window")] = (
        msgspec.field(name="Flushes")
    )
    slow_consumers_window: Annotated[int, java("long", "Slow consumers closed over the window")] = (
        msgspec.field(name="SlowConsumers")
    )
    slow_consumers_total: Annotated[int, java("long", "Slow consumers closed since start")] = (
        msgspec.field(name="SlowConsumerDisconnects")
    )
    replica_lag_max: Annotated[
        int | None, java("long", "Largest JetStream replica lag in records (null: no stream)")
    ] = msgspec.field(name="ReplicaLagMax")
    window_seconds: Annotated[float, _double("Seconds the window-based attributes cover")] = (
        msgspec.field(name="Window")
    )
    panel: Annotated[dict[str, Any], java(MAP, "Every number above")] = msgspec.field(
        name=PANEL_ATTRIBUTE
    )

    @classmethod
    def of(cls, panel: MemberPanel) -> PanelAttributes:
        numbers = panel.as_dict()
        return cls(**numbers, panel=numbers)
