"""``/stats/history``: every member's per-second samples the admin API keeps (ADR 026)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import GuardedRoute, HistoryDep, Viewer
from ..problems import ProblemError, problem_responses
from ..schemas import HistoryOut, UnixSeconds
from ..services.history import history_off_loop

router = APIRouter(prefix="/stats/history", tags=["live statistics"], route_class=GuardedRoute)


@router.get("", name="history.get", response_model=HistoryOut, responses=problem_responses())
async def get_history(
    principal: Viewer,
    collector: HistoryDep,
    since: Annotated[UnixSeconds | None, Query(description="From (inclusive), Unix s")] = None,
    until: Annotated[UnixSeconds | None, Query(description="To (inclusive), Unix s")] = None,
) -> HistoryOut:
    """The per-second samples of every member and their per-second cluster sums.

    The admin API polls each member's own samples of its last minute every second, so no
    second is lost between two polls; it keeps `Admin.HistorySeconds` (default 3600) of them.
    Default range: the 15 minutes up to the newest second held. The range is clamped to the
    seconds held; `since`/`until` of the answer say which range it covers.
    """
    if since is not None and until is not None and since > until:
        raise ProblemError(422, f"since ({since}) is after until ({until})")
    return await history_off_loop(collector.store, collector.live_members(), since, until)
