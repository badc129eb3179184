"""The push server's own part: this node's name, its allocator and its log level.

The client port's keys are in the parts built from them (issue 30 item 4, ADR 043):
``listeners``, ``transport``, ``batching``, ``deflate``, ``session``, ``engine_limits``,
``entitlement`` and ``publishing``, each read by the object it configures.
"""

from __future__ import annotations

import socket
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ServerSettings(BaseModel):
    """Who this server is and how its process runs: read by the start-up code (the allocator),
    the loggers of every command, and everything that names the node (welcome, monitoring, the
    engine's tag in the cluster, the archive)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    server_name: str = Field(default_factory=socket.gethostname, alias="ServerName")
    # the allocator `pushgrid server` runs on: jemalloc gives a flood's memory back (ADR 033)
    allocator: Literal["jemalloc", "malloc", "pymalloc"] = Field(
        default="jemalloc", alias="Allocator"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", alias="LogLevel"
    )
    # how many processes serve as this one server (ADR 044): ``auto`` = the cores this process
    # may use (CPU affinity and cgroup quota, resolved at start-up by server/workers/cores.py).
    # auto by default: every feature works across workers, cluster members included (ADR 067);
    # 1 is one process, exactly as before workers existed.
    workers: int | Literal["auto"] = Field(default="auto", alias="Workers")

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, value: Any) -> Any:
        """``auto`` or a whole number of processes, at least 1 (a file gives text)."""
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        try:
            count = int(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"Workers must be auto or a number of processes, not {value!r}"
            ) from None
        if count < 1:
            raise ValueError(f"Workers must be at least 1 (one process), not {count}")
        return count

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value
