"""One refresh of the console's Overview: the members, their live indicators and the cluster,
read together, with one verdict (issue 34, 4.4).

Before this the console asked ``/members``, ``/stats/live`` and ``/cluster`` one after the
other, each deciding on its own reads; eleven seconds after a SIGKILL the page said "Cluster
OK, 2/3 up" beside a red card. Here the three reads run at once on one member list, and a
member the description could not read is down in the cluster's health as well.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import httpx

from ..member_client import MemberEndpoint, silences
from ..schemas import OverviewOut
from .cluster import cluster_views, merge_views
from .live import live_stats
from .members import describe_all


async def overview(http: httpx.AsyncClient, members: Sequence[MemberEndpoint]) -> OverviewOut:
    listed, live, views = await asyncio.gather(
        describe_all(http, members), live_stats(http, members), cluster_views(http, members)
    )
    down = [item.name for item in listed.items if not item.reachable]
    # the silences as the member reads saw them (a silence may end while the reads run)
    silent = {
        item.name: item.not_answering_seconds
        for item in listed.items
        if item.not_answering_seconds is not None
    }
    cluster = merge_views(members, views, {**silences(http, members), **silent}, down)
    return OverviewOut(at=datetime.now(UTC), members=listed, live=live, cluster=cluster)
