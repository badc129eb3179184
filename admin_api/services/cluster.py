"""The cluster as the admin API sees it: members found through the members' own cluster view
(MBean ``pushgrid:type=Cluster``), and one merged picture of health, quorum and leadership.

Registering (or configuring) one member is enough: the others are *discovered* from its view.
A discovered member is managed with the credentials of the member that reported it only when
its monitoring URL is on ``Admin.DiscoverAllow`` (hosts, ``host:port`` or CIDR ranges, rules as
data in :func:`discovery_allowed`); any other is read without credentials, so a heartbeat that
names a stranger's URL can never make the admin API hand that stranger a password (issue 22).
A discovered member that dies stays listed (its last heartbeat told where it was),
reachable: false, until the cluster forgets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlsplit

import httpx

from pushgrid.metrics.health import Health, Reason, cluster_health, member_transitions
from pushgrid.ops import names
from pushgrid.ops.attributes import ContractError, decode
from pushgrid.ops.cluster import ClusterDocument, ClusterMember

from ..access import is_jmx
from ..answering import Answering, not_answering_text
from ..member_client import MemberClient, MemberEndpoint, MemberFailure, new_http_client, silences
from ..schemas import ClusterMemberOut, ClusterOut, HealthReasonOut

CLUSTER_MBEAN = names.CLUSTER
WATCH_INTERVAL = 1.0  # seconds between two looks of :class:`MemberWatch`

log = logging.getLogger("pushgrid.admin")


async def cluster_views(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint]
) -> list[ClusterDocument | None]:
    """Each member's Cluster MBean (all attributes, pushgrid/ops/cluster.py), None where it
    cannot be read or does not fit the contract (logged: the member runs another version)."""

    async def read(member: MemberEndpoint) -> ClusterDocument | None:
        if is_jmx(member.monitor_url):
            # jmxquery cannot print the Members table, and a JVM run per request is too slow
            # for discovery: a member managed over JMX is listed, not asked for the others.
            return None
        try:
            value = await MemberClient(http, member).request(
                {"type": "read", "mbean": CLUSTER_MBEAN}
            )
        except MemberFailure:
            return None
        try:
            return decode(ClusterDocument, value, f"{CLUSTER_MBEAN} of member {member.name}")
        except ContractError as exc:
            log.warning("%s", exc)
            return None

    return list(await asyncio.gather(*(read(member) for member in members)))


def _matches(entry: str, host: str, port: int) -> bool:
    """One ``Admin.DiscoverAllow`` entry against a URL's host and port."""
    if "/" in entry:
        try:
            return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    if entry.startswith("["):  # [v6] or [v6]:port
        inner, _, rest = entry[1:].partition("]")
        return inner == host and rest in ("", f":{port}")
    if entry.count(":") == 1:  # host:port
        name, _, wanted = entry.partition(":")
        return name == host and wanted == str(port)
    return entry == host  # a name, an IPv4 or a bare IPv6 address: any port


def discovery_allowed(url: str, allow: Sequence[str]) -> bool:
    """Whether ``url`` (a discovered member's monitoring URL) matches an ``Admin.DiscoverAllow``
    entry: a host name or address (any port), ``host:port``, or a CIDR range (pure)."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return False
    return any(_matches(entry.strip().lower(), host, port) for entry in allow if entry.strip())


def discovered_members(
    known: Sequence[MemberEndpoint],
    views: Sequence[ClusterDocument | None],
    allow: Sequence[str] = (),
) -> list[MemberEndpoint]:
    """Members the known ones report that the admin API does not know yet (pure). They carry
    the reporting member's credentials only when ``allow`` lets their URL have them."""
    names = {member.name for member in known}
    urls = {member.monitor_url for member in known}
    found: list[MemberEndpoint] = []
    for via, view in zip(known, views, strict=True):
        for entry in [] if view is None else view.members:
            monitor_urls, name = entry.monitor_urls, entry.name
            if not monitor_urls or name in names or monitor_urls[0] in urls:
                continue
            url = monitor_urls[0].rstrip("/")
            trusted = discovery_allowed(url, allow)
            found.append(
                MemberEndpoint(
                    name=name,
                    monitor_url=url,
                    source="discovered",
                    client_url=entry.client_urls[0] if entry.client_urls else None,
                    username=via.username if trusted else None,
                    password=via.password if trusted else None,
                )
            )
            names.add(name)
            urls.add(monitor_urls[0])
    return found


async def with_discovered(
    http: httpx.AsyncClient, known: Sequence[MemberEndpoint], allow: Sequence[str] = ()
) -> list[MemberEndpoint]:
    if not known:
        return []
    return [*known, *discovered_members(known, await cluster_views(http, known), allow)]


def merge_views(
    members: Sequence[MemberEndpoint],
    views: Sequence[ClusterDocument | None],
    silent: Mapping[str, float] | None = None,
    down: Sequence[str] = (),
) -> ClusterOut:
    """One picture from every member's view (pure): the first readable view gives the mode and
    leadership; each member's state is what the members that can be read agree on.

    ``silent``: members that do not answer (name -> seconds, admin_api/answering.py): each is
    down here whatever the others' heartbeats still say, "not answering for N s". ``down``:
    members another read of the same refresh found unreachable (they count as down here too,
    so that one refresh never shows a member down beside a cluster "ok", issue 34, 4.4)."""
    silent = dict(silent or {})
    gone = set(down) | set(silent)
    readable = [(m, v) for m, v in zip(members, views, strict=True) if v is not None]
    health = cluster_health(
        {
            m.name: None if v is None or m.name in gone else member_health_of(v)
            for m, v in zip(members, views, strict=True)
        }
    )
    reasons = _reasons_out(health.reasons, silent)
    if not readable:
        return ClusterOut(
            mode=None, health=health.status, reasons=reasons, quorum=False, members=[]
        )
    first = readable[0][1]
    states: dict[str, ClusterMember] = {}
    for _, view in readable:
        for entry in view.members:
            if entry.name not in states or entry.is_self:
                states[entry.name] = entry
    quorum_by_member = {m.name: v.quorum for m, v in readable}
    return ClusterOut(
        mode=first.mode,
        health=health.status,
        reasons=reasons,
        quorum=any(quorum_by_member.values()),
        quorum_size=first.quorum_size,
        seeds=first.seeds,
        stream_leader=first.stream_leader,
        members=[
            ClusterMemberOut(
                name=name,
                index=entry.index,
                seed=entry.seed,
                state="up" if entry.state == "up" and name not in gone else "down",
                leader=_leads(entry, first.stream_leader),
                quorum=None if name in silent else quorum_by_member.get(name),
                not_answering_seconds=silent.get(name),
            )
            for name, entry in sorted(states.items(), key=lambda item: item[1].index)
        ],
    )


def _reasons_out(reasons: Sequence[Reason], silent: Mapping[str, float]) -> list[HealthReasonOut]:
    """The health's reasons once each; a silent member's ``member_down`` says for how long."""
    out: list[HealthReasonOut] = []
    seen: set[tuple[str, str]] = set()
    for reason in reasons:
        if (reason.code, reason.member) in seen:
            continue
        seen.add((reason.code, reason.member))
        data = reason.as_dict()
        if reason.code == "member_down" and reason.member in silent:
            data["text"] = f"member {reason.member} is {not_answering_text(silent[reason.member])}"
        out.append(HealthReasonOut(**data))
    return out


def member_health_of(view: ClusterDocument) -> Health:
    """A member's own health as its Cluster MBean reports it (``Health``, ``HealthReasons``)."""
    reasons = [Reason(r.code, r.member) for r in view.health_reasons]
    status = view.health
    if status == "down":
        return Health("down", tuple(reasons))
    if status == "ok" and not reasons:
        return Health("ok")
    return Health("degraded", tuple(reasons))


def _leads(entry: ClusterMember, stream_leader: str | None) -> bool:
    return bool(entry.index) and stream_leader == f"pushgrid-m{entry.index}"


async def cluster_overview(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint]
) -> ClusterOut:
    return merge_views(members, await cluster_views(http, members), silences(http, members))


SLOW_LOOKS_DOWN = 4  # looks in a row without an answer in time before a member is "down"


def watched_state(outcome: str, previous: str | None, slow_looks: int) -> str:
    """A member's state from one look (pure). ``outcome``: ``up`` (it answered), ``refused``
    (nothing listens: down at once) or ``slow`` (no answer within the interval). A slow member
    is down only after ``SLOW_LOOKS_DOWN`` looks in a row (4 s, past the cluster's 3 s heartbeat
    timeout): on a loaded machine a live member missed one 2 s look and the admin API logged it
    down and up again (`make cluster`, SIGKILL of m3: "member m1 is down")."""
    if outcome == "up":
        return "up"
    if outcome == "refused" or slow_looks >= SLOW_LOOKS_DOWN:
        return "down"
    return previous or "up"


async def _answers(http: httpx.AsyncClient, member: MemberEndpoint) -> str:
    try:
        await MemberClient(http, member).request({"type": "read", "mbean": CLUSTER_MBEAN})
    except MemberFailure as exc:
        return "slow" if exc.kind == "timeout" else "refused"
    return "up"


class MemberWatch:
    """Looks at every member the admin API manages (discovered ones too) each ``interval``
    seconds, with two intervals as the time box: one WARNING line when a member stops
    answering, one when it answers again (the members' own Cluster MBean; members
    managed over JMX are not watched: a JVM run per look is too dear).

    It is the *probe* of :class:`~admin_api.answering.Answering`: it asks silent members too,
    and records each outcome; every other path skips a silent member, so the watch's first
    answer is what ends a silence (issue 34, 4.1)."""

    def __init__(
        self,
        members: Callable[[], list[MemberEndpoint]],
        interval: float = WATCH_INTERVAL,
        answering: Answering | None = None,
        allow: Sequence[str] = (),
    ) -> None:
        self.members = members
        self.interval = interval
        self.answering = answering or Answering()
        self.allow = list(allow)
        self.states: dict[str, str] | None = None
        self.slow: dict[str, int] = {}  # looks in a row a member did not answer in time
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def look(self, http: httpx.AsyncClient) -> list[tuple[str, str]]:
        known = await asyncio.to_thread(self.members)
        every = await with_discovered(http, known, self.allow)
        members = [m for m in every if not is_jmx(m.monitor_url)]
        outcomes = await asyncio.gather(*(_answers(http, m) for m in members))
        states: dict[str, str] = {}
        for member, outcome in zip(members, outcomes, strict=True):
            self.slow[member.name] = self.slow.get(member.name, 0) + 1 if outcome == "slow" else 0
            previous = (self.states or {}).get(member.name)
            states[member.name] = watched_state(outcome, previous, self.slow[member.name])
        changes = member_transitions(self.states, states)
        for name, state in changes:
            if state == "down":
                log.warning("member %s is down: its monitoring port does not answer", name)
            else:
                log.info("member %s is up", name)  # a recovery: INFO
        self.states = states
        return changes

    async def _run(self) -> None:
        # the time box is two intervals: on a loaded machine (load 28 on 2 cores) a live member
        # missed a 1 s look and was "not answering for 0 s" for a moment
        async with new_http_client(2 * self.interval, self.answering, probe=True) as http:
            while True:
                started = time.monotonic()
                try:
                    await self.look(http)
                except Exception:
                    log.exception("member watch failed")
                await asyncio.sleep(max(0.05, self.interval - (time.monotonic() - started)))
