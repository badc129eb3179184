"""The batching part (spec 5.6): queued messages of a connection leaving as one frame."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class BatchingSettings(BaseModel):
    """What ``Batching`` (server/transport/context.py) is built from; both 0: no batching."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    batching_time: int = Field(default=0, ge=0, le=60_000, alias="BatchingTime")
    batching_max_size: int = Field(default=0, ge=0, alias="BatchingMaxSize")
