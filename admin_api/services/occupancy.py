"""Occupancy and presence of a subject, asked of one member (Jolokia ``pushgrid:type=Subjects``,
operations ``occupancy`` and ``presence``): every member knows the whole cluster's."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from pushgrid.ops import names

from ..access import member_access
from ..member_client import SUBJECTS_MBEAN, MemberEndpoint, MemberFailure
from ..schemas import OccupancyOut, PresenceOut
from .subjects import check_subject

__all__ = ["check_subject", "occupancy", "presence"]

_Out = TypeVar("_Out", OccupancyOut, PresenceOut)


async def _ask(
    http: httpx.AsyncClient, member: MemberEndpoint, operation: str, subject: str
) -> Any:
    check_subject(subject)
    value = await member_access(http, member).execute(SUBJECTS_MBEAN, operation, subject)
    if not isinstance(value, dict):
        raise MemberFailure(member, "error", f"unexpected {operation} answer")
    return value


async def occupancy(http: httpx.AsyncClient, member: MemberEndpoint, subject: str) -> OccupancyOut:
    return _model(
        OccupancyOut,
        member,
        "occupancy",
        await _ask(http, member, names.SUBJECTS_OCCUPANCY, subject),
    )


async def presence(http: httpx.AsyncClient, member: MemberEndpoint, subject: str) -> PresenceOut:
    return _model(
        PresenceOut, member, "presence", await _ask(http, member, names.SUBJECTS_PRESENCE, subject)
    )


def _model(model: type[_Out], member: MemberEndpoint, operation: str, value: Any) -> _Out:
    try:
        return model.model_validate({**value, "member": member.name})
    except ValidationError as exc:
        raise MemberFailure(member, "error", f"unexpected {operation} answer: {exc}") from None
