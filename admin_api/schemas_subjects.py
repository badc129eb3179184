"""The subject browser's documents (``/subjects``, issue 35 item 3, ADR 051)."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import BaseModel, Field

from .schemas import MemberError, Page

#: the most rows of one page, and the most cached messages one history answer shows (the
#: member's own bound, ``server/monitoring/operations.py:MAX_HISTORY``, is the same)
MAX_SUBJECT_PAGE: Final = 500
MAX_HISTORY: Final = 100

SubjectSort = Literal[
    "subject",
    "-subject",
    "subscribers",
    "-subscribers",
    "snapshot_bytes",
    "-snapshot_bytes",
    "last_publish",
    "-last_publish",
]


class SubjectRow(BaseModel):
    subject: str
    subscribers: int = Field(ge=0, description="Local subscribers, summed over the members")
    snapshot_bytes: int = Field(
        ge=0,
        description="The retained snapshot's size as MaxMessageSize counts it (the largest "
        "a member holds; 0: no snapshot)",
    )
    last_publish: datetime | None = Field(
        description="The newest publish a member saw (null: subscribed, never published)"
    )
    members: list[str] = Field(description="The members that hold or subscribe the subject")


class SubjectPage(Page):
    pattern: str
    items: list[SubjectRow]
    truncated: bool = Field(
        description="A member had more than 10,000 matching subjects and listed only those"
    )
    unreachable: list[MemberError] = Field(default_factory=list)


class HistoryItem(BaseModel):
    epoch: str
    seq: int
    ts: datetime = Field(description="When the engine accepted the message")
    retained: bool
    qos: str
    content: str = Field(description="Cut at 2 KiB")
    fields: dict[str, str]


class SubjectHistory(BaseModel):
    member: str
    subject: str
    limit: int
    items: list[HistoryItem] = Field(description="Oldest first")


class MemberRemoval(BaseModel):
    member: str
    removed: bool = Field(description="False: the member held no snapshot of the subject")
    epoch: str = Field(description="The subject's epoch on that member after it (unchanged)")
    seq: int = Field(description="The subject's seq on that member after it (unchanged)")


class SnapshotRemoved(BaseModel):
    subject: str
    removed: bool = Field(description="A member held a snapshot of the subject")
    members: list[MemberRemoval] = Field(description="Every member that answered")
    unreachable: list[MemberError] = Field(default_factory=list)
