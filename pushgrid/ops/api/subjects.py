"""A subject seen through the admin API: its snapshot and subscribers on one member, a test
publish's answer and who follows a presence subject (``GET /members/{name}/subjects``,
``POST /members/{name}/publish``, ``GET /members/{name}/presence``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SnapshotOut(BaseModel):
    subject: str
    content: str
    fields: dict[str, str]
    epoch: str
    seq: int
    ts: int = Field(description="Milliseconds since the Unix epoch")


class SubjectInfo(BaseModel):
    member: str
    subject: str
    subscribers: int = Field(ge=0, description="The member's local subscribers")
    snapshot: SnapshotOut | None = Field(description="Null when the subject has no snapshot")


class PublishOut(BaseModel):
    member: str
    subject: str
    result: Literal["ok"]
    epoch: str
    seq: int


class PresentClientOut(BaseModel):
    session: str
    client_id: str = Field(description='The subscription\'s client id ("" when none)')
    member: str = Field(description="The member the session is connected to")


class PresenceOut(BaseModel):
    """Who follows a presence subject in the whole cluster (docs/occupancy.md, "Presence")."""

    member: str = Field(description="The member asked")
    subject: str
    enabled: bool = Field(description="False when the subject matches no PresencePatterns")
    subscribers: int = Field(ge=0)
    clients: list[PresentClientOut]
    truncated: bool = Field(description="The list holds fewer sessions than subscribers")
