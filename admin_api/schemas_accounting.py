"""Bodies of ``GET /api/v1/delivery/accounting`` (issue 33 item 4, ADR 054)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .schemas import MemberError


class AccountRowOut(BaseModel):
    """One row: a subject, a watched pattern or the totals, summed over the members listed."""

    name: str = Field(description="Subject or watched pattern; '' for the totals")
    total: dict[str, int] = Field(description="Counts since the members started, per column")
    per_second: dict[str, int] = Field(description="The members' last second, per column")
    unaccounted: int = Field(
        description="due - (written + conflated + dropped + closed + covered): 0 on a settled "
        "system; in flight (or a bug) otherwise"
    )
    adds_up: bool = Field(description="unaccounted == 0")
    members: list[str] = Field(description="The members whose rows were added")


class AccountingMemberOut(BaseModel):
    """A member as read (its MBean ``pushgrid:type=Accounting``)."""

    member: str
    reachable: bool
    error: str | None = None
    unaccounted: int | None = None
    subjects_followed: int | None = None
    subjects_forgotten: int | None = None


class AccountingOut(BaseModel):
    """Delivery accounting of the cluster (or one member): totals, top subjects, patterns."""

    columns: list[str] = Field(description="The columns of every row, in order")
    outcomes: list[str] = Field(description="The columns whose sum equals due when settled")
    members: list[AccountingMemberOut]
    totals: AccountRowOut
    subjects: list[AccountRowOut] = Field(
        description="Subjects by deliveries due (each member lists its own top ones)"
    )
    patterns: list[AccountRowOut]


class SlowConsumerOffenderOut(BaseModel):
    """One client the members closed as a slow consumer, with every close of it added up."""

    client: str = Field(description="Its client id, else its host (address without the port)")
    client_id: str
    closes: int = Field(description="Its closes in the members' logs (each keeps its last 200)")
    members: list[str] = Field(description="The members that closed it")
    first_at: datetime
    last_at: datetime
    last_remote: str
    subjects: list[str] = Field(description="What it followed when closed (first 50, union)")
    max_queued_bytes: int
    compressed: bool = Field(description="Its last close was on a compressed connection")
    last_rtt_ms: float | None = None


class SlowConsumerOffendersOut(BaseModel):
    items: list[SlowConsumerOffenderOut] = Field(description="Most closes first")
    unreachable: list[MemberError] = Field(default_factory=list)
