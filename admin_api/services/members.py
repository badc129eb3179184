"""Members: the configured ones (``Admin.Members``, read-only) merged with the registered ones
(SQL), and what each one's Jolokia agent says about it.

A configured member uses ``Admin.MemberUsername``/``Admin.MemberPassword``; a registered member
its own credentials. A registered name may not shadow a configured one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from pushgrid.config import AdminSettings, JmxSettings
from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import RegisteredMember
from pushgrid.metrics.sqlstore.models import utc_now
from pushgrid.ops import names
from pushgrid.ops.panel import PANEL_ATTRIBUTE
from pushgrid.ops.server import ServerIdentity, ServerSettingsView
from pushgrid.ops.workers import WorkerProcess, WorkersView

from ..access import is_jmx, member_access, read_view
from ..member_client import MemberEndpoint, MemberFailure, check_monitor_url, derive_client_url
from ..problems import ProblemError, conflict, not_found
from ..schemas import MemberCreate, MemberList, MemberOut, MemberPanelOut
from ..secretbox import SecretBox, is_sealed, secret_box


def configured_members(admin: AdminSettings, jmx_login: JmxSettings) -> list[MemberEndpoint]:
    """``Admin.Members`` (``name=URL`` entries), in their order."""
    members: list[MemberEndpoint] = []
    for entry in admin.admin_members:
        name, _, url = entry.partition("=")
        try:
            monitor_url = check_monitor_url(url)
        except ValueError:
            monitor_url = url.strip().rstrip("/")
        # A JMX member (its bridge) takes the JMX login, a Jolokia one the monitoring login.
        jmx = is_jmx(monitor_url)
        members.append(
            MemberEndpoint(
                name=name.strip(),
                monitor_url=monitor_url,
                source="config",
                username=jmx_login.jmx_username if jmx else admin.admin_member_username,
                password=jmx_login.jmx_password if jmx else admin.admin_member_password,
            )
        )
    return members


def _registered(row: RegisteredMember, box: SecretBox) -> MemberEndpoint:
    return MemberEndpoint(
        name=row.name,
        monitor_url=row.monitor_url,
        source="registered",
        client_url=row.client_url,
        username=row.username,
        password=box.open(row.password),
        created_at=row.created_at,
    )


class MemberService:
    """The member directory (database part owned here)."""

    def __init__(self, db: Session, admin: AdminSettings, jmx: JmxSettings) -> None:
        """``jmx``: the JMX login, for configured members reached over their JMX bridge."""
        self.db = db
        self.configured = configured_members(admin, jmx)
        self.box = secret_box(admin)

    def all(self) -> list[MemberEndpoint]:
        """Configured members first (in configuration order), then registered ones by name."""
        configured = self.configured
        names = {member.name for member in configured}
        rows = self.db.scalars(select(RegisteredMember).order_by(RegisteredMember.name))
        return configured + [_registered(row, self.box) for row in rows if row.name not in names]

    def get(self, name: str) -> MemberEndpoint:
        for member in self.configured:
            if member.name == name:
                return member
        row = self.db.get(RegisteredMember, name)
        if row is None:
            raise not_found(f"no member {name!r}")
        return _registered(row, self.box)

    def register(self, data: MemberCreate, created_by: str | None) -> MemberEndpoint:
        if any(member.name == data.name for member in self.configured):
            raise conflict(f"member {data.name!r} is configured in Admin.Members", "member_exists")
        if self.db.get(RegisteredMember, data.name) is not None:
            raise conflict(f"member {data.name!r} is already registered", "member_exists")
        if (data.username is None) != (data.password is None):
            raise ProblemError(422, "give both username and password, or neither")
        row = RegisteredMember(
            name=data.name,
            monitor_url=data.monitor_url,
            client_url=data.client_url,
            username=data.username,
            password=self.box.seal(data.password),  # never in clear at rest
            created_at=utc_now(),
            created_by=created_by,
        )
        with transaction(self.db):
            self.db.add(row)
        return _registered(row, self.box)

    def encrypt_stored(self) -> int:
        """Encrypt passwords stored in clear (before migration 0005); how many there were."""
        rows = [
            row
            for row in self.db.scalars(select(RegisteredMember))
            if row.password is not None and not is_sealed(row.password)
        ]
        if rows:
            with transaction(self.db):
                for row in rows:
                    row.password = self.box.seal(row.password)
        return len(rows)

    def remove(self, name: str) -> None:
        if any(member.name == name for member in self.configured):
            raise conflict(
                f"member {name!r} is configured in Admin.Members (read-only): remove it from the "
                "configuration",
                "member_read_only",
            )
        row = self.db.get(RegisteredMember, name)
        if row is None:
            raise not_found(f"no member {name!r}")
        with transaction(self.db):
            self.db.delete(row)


# --- what the members say -----------------------------------------------------------------------


def _base(member: MemberEndpoint, client_url: str | None = None) -> dict[str, Any]:
    return {
        "name": member.name,
        "source": member.source,
        "monitor_url": member.monitor_url,
        "client_url": member.client_url or client_url,
        "has_credentials": member.has_credentials,
        "created_at": member.created_at,
    }


async def read_panel(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberPanelOut | None:
    """The member's operator panel; None when it has none (an older member) or it cannot be
    read (the member view says why through ``reachable``/``error``). Not read through a JMX
    bridge: each JMX read starts a JVM, and the Jolokia port has the panel for less."""
    if is_jmx(member.monitor_url):
        return None
    try:
        values = await member_access(http, member).read(names.MEMBER_PANEL, [PANEL_ATTRIBUTE])
        return MemberPanelOut.model_validate(values.get(PANEL_ATTRIBUTE))
    except (MemberFailure, ValidationError):
        return None


async def read_processes(
    http: httpx.AsyncClient, member: MemberEndpoint
) -> list[WorkerProcess] | None:
    """The member's processes (MBean ``pushgrid:type=Workers``); None as for the panel: an
    older member without the MBean, one that cannot be read, or one behind a JMX bridge."""
    if is_jmx(member.monitor_url):
        return None
    try:
        return (await read_view(http, member, names.WORKERS, WorkersView)).rows()
    except (MemberFailure, ValidationError):
        return None


async def describe(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberOut:
    """The member and its state; a member that cannot be read is ``reachable: false``."""
    try:
        server, panel, processes = await asyncio.gather(
            read_view(http, member, names.SERVER, ServerIdentity),
            read_panel(http, member),
            read_processes(http, member),
        )
    except MemberFailure as exc:
        return MemberOut(
            **_base(member),
            reachable=False,
            error=exc.detail,
            not_answering_seconds=exc.silent_seconds,
        )
    derived = derive_client_url(member.monitor_url, server.settings.listen)
    return MemberOut(
        **_base(member, derived),
        reachable=True,
        server_name=server.server_name,
        version=server.version,
        uptime_seconds=server.uptime,
        started_at=datetime.fromtimestamp(server.start_time / 1000, UTC),
        engine=server.engine,
        delivery_mode=server.delivery_mode,
        connected_users=server.connected_users,
        subscriptions=server.subscriptions,
        panel=panel,
        processes=processes,
    )


async def describe_all(http: httpx.AsyncClient, members: Sequence[MemberEndpoint]) -> MemberList:
    items = list(await asyncio.gather(*(describe(http, member) for member in members)))
    reachable = sum(1 for item in items if item.reachable)
    return MemberList(items=items, reachable=reachable, unreachable=len(items) - reachable)


async def client_url(http: httpx.AsyncClient, member: MemberEndpoint) -> str:
    """Where the member's client port is: registered, or derived from its ``Listen`` setting."""
    if member.client_url:
        return member.client_url
    server = await read_view(http, member, names.SERVER, ServerSettingsView)
    url = derive_client_url(member.monitor_url, server.settings.listen)
    if url is None:
        raise MemberFailure(
            member,
            "error",
            "its client port is unknown (no plain Listen address): register the member with a "
            "client_url",
        )
    return url
