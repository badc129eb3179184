"""A run of the statistics pipeline (``GET /jobs``, ``POST /jobs``): its state and its stages."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel


class StageOut(BaseModel):
    name: str
    input_rows: int | None = None
    output_rows: int | None = None
    seconds: float | None = None


class JobRunOut(BaseModel):
    id: int
    status: Literal["running", "succeeded", "failed", "interrupted"]
    started_at: datetime
    finished_at: datetime | None
    duration_seconds: float | None
    as_of: datetime | None
    master: str | None
    input_rows: int | None
    output_rows: int | None
    error: str | None
    stages: list[StageOut] | None
