"""What the caller may read of a member's content (issue 22 item 4).

The admin API reads a member through its monitoring port, which knows nothing of the member's
entitlement. So, for a member whose ``Entitlement`` is not ``none``, subject content (the
subject route, the frames of a session detail) is shown only for subjects the caller's
entitlement token grants, and the member decides: the admin API asks its client port
(``GET /snapshot`` with ``Authorization: Bearer <token>``), exactly as a client would be asked.
The token comes in the ``X-Entitlement-Token`` header (never the query string: URLs get
logged) and is not stored. A member without entitlement shows everything to the route's role.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

import httpx

from pushgrid.ops import names
from pushgrid.ops.server import ServerSettingsView

from ..access import read_view
from ..member_client import MemberEndpoint, MemberFailure
from ..problems import ProblemError
from .members import client_url

TOKEN_HEADER: Final = "X-Entitlement-Token"
REDACTED: Final = "entitlement"
# The member's answers to GET /snapshot that say "this token may read the subject".
_GRANTED: Final = frozenset({200, 404})
_DENIED: Final = frozenset({401, 403})


async def entitlement_mode(http: httpx.AsyncClient, member: MemberEndpoint) -> str:
    """The member's ``Entitlement`` setting (``none``, ``jwt``, ``custom:NAME``)."""
    server = await read_view(http, member, names.SERVER, ServerSettingsView)
    mode = server.settings.entitlement
    return "unknown" if mode is None else mode  # unknown: assume the member protects them


async def granted(
    http: httpx.AsyncClient, member: MemberEndpoint, token: str | None, subjects: Iterable[str]
) -> set[str]:
    """The subjects (of ``subjects``) the member lets ``token`` read; none without a token."""
    wanted = sorted(set(subjects))
    if token is None or not wanted:
        return set()
    base = (await client_url(http, member)).rstrip("/")

    async def ask(subject: str) -> bool:
        try:
            response = await http.get(
                f"{base}/snapshot",
                params={"subject": subject},
                headers={"authorization": f"Bearer {token}", "accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise MemberFailure(member, "unreachable", f"client port: {exc}") from None
        if response.status_code in _GRANTED:
            return True
        if response.status_code in _DENIED:
            return False
        raise MemberFailure(
            member, "error", f"client port answered HTTP {response.status_code} to /snapshot"
        )

    answers = await asyncio.gather(*(ask(subject) for subject in wanted))
    return {subject for subject, ok in zip(wanted, answers, strict=True) if ok}


async def require_grant(
    http: httpx.AsyncClient, member: MemberEndpoint, token: str | None, subject: str
) -> None:
    """403 unless the caller may read ``subject`` on ``member`` (see the module docstring)."""
    mode = await entitlement_mode(http, member)
    if mode == "none":
        return
    if token is None:
        raise ProblemError(
            403,
            f"member {member.name!r} uses Entitlement = {mode}: send an entitlement token that "
            f"grants {subject!r} in the {TOKEN_HEADER} header",
            "entitlement_required",
            member=member.name,
        )
    if subject not in await granted(http, member, token, [subject]):
        raise ProblemError(
            403,
            f"member {member.name!r}: the entitlement token does not grant {subject!r}",
            "entitlement_denied",
            member=member.name,
        )


def frame_subjects(text: str | None) -> set[str] | None:
    """The subjects a recorded frame carries (``set()``: none); None when it cannot be told
    (not JSON, e.g. cut at 2 KiB): such a frame is treated as carrying a forbidden subject."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    items = value if isinstance(value, list) else [value]
    found: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("subject"), str):
            found.add(item["subject"])
        listed = item.get("subjects")
        if isinstance(listed, list):
            found.update(s for s in listed if isinstance(s, str))
    return found


def redact_frames(frames: Sequence[dict[str, Any]], allowed: set[str]) -> list[dict[str, Any]]:
    """The frames with the text of every frame that carries a subject outside ``allowed``
    (or whose subjects cannot be told) replaced by ``None`` and ``redacted`` set (pure)."""
    out: list[dict[str, Any]] = []
    for frame in frames:
        subjects = frame_subjects(frame.get("text"))
        if subjects is not None and subjects <= allowed:
            out.append(frame)
        else:
            out.append({**frame, "text": None, "redacted": REDACTED})
    return out


async def visible_frames(
    http: httpx.AsyncClient,
    member: MemberEndpoint,
    token: str | None,
    frames: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """A session's recorded frames as the caller may see them."""
    if await entitlement_mode(http, member) == "none":
        return list(frames)
    subjects: set[str] = set()
    for frame in frames:
        subjects |= frame_subjects(frame.get("text")) or set()
    return redact_frames(frames, await granted(http, member, token, subjects))
