"""``/watched-subjects``: the members' watched patterns, and adding or removing one at run time."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, status

from ..deps import (
    AdminSettingsDep,
    GuardedRoute,
    HttpDep,
    MemberDep,
    MembersDep,
    Operator,
    SqlSession,
    Viewer,
    audit_target,
)
from ..problems import MEMBER_ERRORS, problem_responses
from ..schemas import WatchedWindowStatList
from ..schemas_ops import MemberWatched, WatchChange, WatchedSubjects, WatchIn
from ..services.statistics import StatisticsService
from ..services.watched import change, check_pattern, member_watched, watched_subjects

router = APIRouter(tags=["watched subjects"], route_class=GuardedRoute)


@router.get(
    "/watched-subjects",
    name="watched.cluster",
    response_model=WatchedSubjects,
    responses=problem_responses(),
)
async def get_watched(principal: Viewer, members: MembersDep, http: HttpDep) -> WatchedSubjects:
    """The watched patterns of every member and of the cluster (summed per pattern).

    Per pattern: cumulative messages and bytes in and out, local subscribers, active subjects,
    and six per-second indicators with their twelve windows. A member that cannot be read is
    listed with `reachable: false`.
    """
    return await watched_subjects(http, members)


@router.get(
    "/watched-subjects/statistics",
    name="watched.statistics",
    response_model=WatchedWindowStatList,
    responses=problem_responses(422),
)
def get_watched_statistics(
    principal: Viewer,
    db: SqlSession,
    admin: AdminSettingsDep,
    pattern: Annotated[str, Query(max_length=1024, description="The watched pattern")],
) -> WatchedWindowStatList:
    """The pattern's window statistics stored by the statistics pipeline (`pushgrid stats
    run`): per scope (`cluster`, `node:<ServerName>`), indicator and window, with `coverage`,
    `low_coverage` and `stale` as in `/stats/windows`. Empty until a run has seen the pattern
    in the archive. 422 `invalid_pattern` for a bad pattern.
    """
    check_pattern(pattern)
    return StatisticsService(db, admin.admin_stale_after).watched_window_stats(pattern)


@router.get(
    "/members/{name}/watched-subjects",
    name="watched.member",
    response_model=MemberWatched,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_member_watched(principal: Viewer, member: MemberDep, http: HttpDep) -> MemberWatched:
    """One member's watched patterns."""
    return await member_watched(http, member)


@router.post(
    "/watched-subjects",
    name="watched.add",
    status_code=status.HTTP_201_CREATED,
    response_model=WatchChange,
    responses=problem_responses(409, 422),
)
async def add_watched(
    principal: Operator, body: WatchIn, members: MembersDep, request: Request, http: HttpDep
) -> WatchChange:
    """Watch a subject pattern on every member (`/Stocks/NYSE/*`).

    Per member: `watched`, `already_watched` or `failed` (unreachable). 422 `invalid_pattern`
    for a bad pattern, 409 `watch_cap` when a member already watches WatchedSubjects.MaxPatterns
    patterns. Patterns added here last until the member restarts.
    """
    audit_target(request, body.pattern)
    return await change(http, members, body.pattern, add=True)


@router.delete(
    "/watched-subjects",
    name="watched.remove",
    response_model=WatchChange,
    responses=problem_responses(404, 422),
)
async def remove_watched(
    principal: Operator,
    pattern: Annotated[str, Query(max_length=1024, description="The pattern to stop watching")],
    members: MembersDep,
    request: Request,
    http: HttpDep,
) -> WatchChange:
    """Stop watching a pattern on every member (a configured one too, until a restart).

    Per member: `removed`, `not_watched` or `failed`; 404 `not_watched` when no member had it.
    """
    audit_target(request, pattern)
    return await change(http, members, pattern, add=False)
