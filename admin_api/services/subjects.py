"""Subjects of one member: snapshot and subscriber count (Jolokia ``pushgrid:type=Subjects``),
and a test publish through the member's client port (``POST /publish``; Jolokia has no publish).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from pushgrid.ops import names
from pushgrid.protocol.errors import InvalidSubject
from pushgrid.protocol.subjects import validate_subject

from ..access import member_access
from ..member_client import SUBJECTS_MBEAN, MemberClient, MemberEndpoint, MemberFailure
from ..problems import ProblemError
from ..schemas import PublishIn, PublishOut, SnapshotOut, SubjectInfo
from .members import client_url


def check_subject(subject: str) -> None:
    """The push server's own subject rules (docs/protocol.md section 3), as a 422 problem."""
    try:
        validate_subject(subject)
    except InvalidSubject as invalid:
        raise ProblemError(422, invalid.message, "invalid_subject") from None


def _snapshot(member: MemberEndpoint, value: Any) -> SnapshotOut | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MemberFailure(member, "error", "unexpected snapshot answer")
    return SnapshotOut.model_validate(value)


async def subject_info(
    http: httpx.AsyncClient, member: MemberEndpoint, subject: str
) -> SubjectInfo:
    check_subject(subject)
    access = member_access(http, member)
    snapshot_value, count = await asyncio.gather(
        access.execute(SUBJECTS_MBEAN, names.SUBJECTS_SNAPSHOT, subject),
        access.execute(SUBJECTS_MBEAN, names.SUBJECTS_SUBSCRIBER_COUNT, subject),
    )
    snapshot = _snapshot(member, snapshot_value)
    if not isinstance(count, int) or isinstance(count, bool):
        raise MemberFailure(member, "error", "unexpected subscriberCount answer")
    return SubjectInfo(member=member.name, subject=subject, subscribers=count, snapshot=snapshot)


def _member_problem(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or f"HTTP {response.status_code}"
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return str(body["detail"])
    return f"HTTP {response.status_code}"


async def publish(http: httpx.AsyncClient, member: MemberEndpoint, data: PublishIn) -> PublishOut:
    """Publish a test message on the member (see docs/admin-api.md for the error mapping)."""
    check_subject(data.subject)
    url = await client_url(http, member)
    body = {
        "subject": data.subject,
        "content": data.content,
        "fields": data.fields,
        "retained": data.retained,
        "qos": data.qos,
    }
    response = await MemberClient(http, member).publish(url, body, data.entitlement_token)
    if response.status_code == 200:
        answer = response.json()
        return PublishOut(
            member=member.name,
            subject=data.subject,
            result="ok",
            epoch=str(answer.get("epoch", "")),
            seq=int(answer.get("seq", 0)),
        )
    reason = _member_problem(response)
    if response.status_code == 413:
        raise ProblemError(
            413, f"member {member.name!r}: {reason}", "message_too_large", member=member.name
        )
    if response.status_code == 400:
        raise ProblemError(
            422, f"member {member.name!r}: {reason}", "invalid_message", member=member.name
        )
    if response.status_code == 503:
        raise ProblemError(
            503, f"member {member.name!r}: {reason}", "engine_unavailable", member=member.name
        )
    if response.status_code == 403:
        raise MemberFailure(member, "error", f"publish denied: {reason}")
    raise MemberFailure(member, "error", f"publish answered HTTP {response.status_code}: {reason}")
