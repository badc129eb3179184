"""``pushgrid rrd ...``: chart the members with RRDtool (see docs/monitoring.md, "RRD graphs").

    pushgrid rrd feed  [--config FILE] [--member NAME=URL ...] [--dir DIR] [--count N]
    pushgrid rrd graph [--dir DIR] [--out DIR] [--period day|week|month|year ...] [--start T]
    pushgrid rrd create --member NAME=URL ... [--dir DIR]

The members are ``Admin.Members`` (``name=http://host:8900``, their monitoring endpoint) with
``Admin.MemberUsername`` / ``Admin.MemberPassword`` unless ``--member`` is given. ``feed``
creates a missing RRD file (``DIR/<name>.rrd``) and then updates every member once a second from
its ``/stats``; a member that does not answer is skipped (its seconds become unknown).

Exit codes: 0 done; 1 rrdtool missing or failing; 2 bad option or configuration.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import httpx
import typer

from pushgrid.config.cli_support import fail, settings_or_exit
from pushgrid.metrics import rrd

rrd_app = typer.Typer(
    name="rrd",
    help="RRD graphs of the seven indicators: feed RRD files from /stats, draw PNGs.",
    no_args_is_help=True,
    add_completion=False,
)

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="pushgrid.conf (Admin.Members, credentials).")
]
DirOption = Annotated[Path, typer.Option("--dir", help="Directory of the RRD files.")]
MemberOption = Annotated[
    list[str] | None,
    typer.Option("--member", "-m", metavar="NAME=URL", help="A member's monitoring URL."),
]
DEFAULT_DIR = Path("data/rrd")


def register(app: typer.Typer) -> None:
    """Add the ``rrd`` command group to the ``pushgrid`` app."""
    app.add_typer(rrd_app)


@dataclass(frozen=True)
class RrdMember:
    name: str
    url: str

    def path(self, directory: Path) -> Path:
        return directory / f"{self.name}.rrd"


def parse_member(text: str) -> RrdMember:
    name, sep, url = text.partition("=")
    name, url = name.strip(), url.strip().rstrip("/")
    if not sep or not name or not url.startswith(("http://", "https://")):
        raise ValueError(f"{text!r} is not NAME=http(s)://host:port")
    if "/" in name or name.startswith("."):
        raise ValueError(f"{name!r} cannot be a file name")
    return RrdMember(name, url)


def _members(
    config: Path | None, given: list[str] | None
) -> tuple[list[RrdMember], httpx.BasicAuth | None]:
    settings = settings_or_exit(config)
    try:
        members = [parse_member(m) for m in (given or settings.admin_members)]
    except ValueError as exc:
        raise fail(f"--member {exc}", 2) from None
    auth = None
    if settings.admin_member_username is not None:
        auth = httpx.BasicAuth(settings.admin_member_username, settings.admin_member_password or "")
    return members, auth


def _ensure(tool: rrd.RrdTool, member: RrdMember, directory: Path, start: int) -> bool:
    path = member.path(directory)
    if path.exists():
        return False
    directory.mkdir(parents=True, exist_ok=True)
    tool.run(rrd.create_args(path, start))
    return True


@rrd_app.command("create")
def create(
    config: ConfigOption = None, member: MemberOption = None, dir: DirOption = DEFAULT_DIR
) -> None:
    """Create the members' RRD files that do not exist yet."""
    members, _ = _members(config, member)
    try:
        with rrd.RrdTool() as tool:
            for m in members:
                made = _ensure(tool, m, dir, int(time.time()) - 1)
                typer.echo(f"{m.path(dir)}: {'created' if made else 'exists, kept'}")
    except rrd.RrdError as exc:
        raise fail(f"rrdtool: {exc}") from None


@rrd_app.command("feed")
def feed(
    config: ConfigOption = None,
    member: MemberOption = None,
    dir: DirOption = DEFAULT_DIR,
    count: Annotated[
        int | None, typer.Option("--count", min=1, help="Stop after N seconds (default: never).")
    ] = None,
) -> None:
    """Update every member's RRD once a second from its /stats (creating missing files)."""
    members, auth = _members(config, member)
    try:
        with rrd.RrdTool() as tool:
            asyncio.run(Feeder(tool, members, dir, auth).run(count))
    except rrd.RrdError as exc:
        raise fail(f"rrdtool: {exc}") from None
    except KeyboardInterrupt:
        pass


class Feeder:
    """Polls every member's /stats just after each whole second and updates its RRD."""

    def __init__(
        self,
        tool: rrd.RrdTool,
        members: list[RrdMember],
        directory: Path,
        auth: httpx.BasicAuth | None,
    ) -> None:
        self.tool = tool
        self.members = members
        self.directory = directory
        self.auth = auth
        self.last: dict[str, int] = {}
        self.failing: set[str] = set()

    async def run(self, count: int | None) -> None:
        start = int(time.time())
        for m in self.members:
            if _ensure(self.tool, m, self.directory, start - 1):
                typer.echo(f"created {m.path(self.directory)}", err=True)
        async with httpx.AsyncClient(auth=self.auth, timeout=0.8, trust_env=False) as http:
            ticks = 0
            while count is None or ticks < count:
                await asyncio.sleep(1.0 - time.time() % 1.0 + 0.01)
                await self.tick(http, int(time.time()))
                ticks += 1

    async def tick(self, http: httpx.AsyncClient, ts: int) -> None:
        results = await asyncio.gather(
            *(self._stats(http, m) for m in self.members), return_exceptions=True
        )
        for m, result in zip(self.members, results, strict=True):
            if isinstance(result, BaseException):
                self._report(m, f"cannot read {m.url}/stats: {result!r}")
                continue
            self._report(m, None)
            if ts > self.last.get(m.name, 0):  # rrdtool refuses two updates in one second
                self.tool.run(rrd.update_args(m.path(self.directory), ts, result))
                self.last[m.name] = ts

    async def _stats(self, http: httpx.AsyncClient, member: RrdMember) -> dict[str, float]:
        response = await http.get(f"{member.url}/stats")
        response.raise_for_status()
        return rrd.parse_stats(response.text)

    def _report(self, member: RrdMember, problem: str | None) -> None:
        """Say when a member stops or starts answering (not every second)."""
        if problem is not None and member.name not in self.failing:
            self.failing.add(member.name)
            typer.echo(f"pushgrid rrd: member {member.name}: {problem}", err=True)
        elif problem is None and member.name in self.failing:
            self.failing.discard(member.name)
            typer.echo(f"pushgrid rrd: member {member.name}: answering again", err=True)


@rrd_app.command("graph")
def graph(
    dir: DirOption = DEFAULT_DIR,
    out: Annotated[Path, typer.Option("--out", help="Directory for the PNG files.")] = Path(
        "data/rrd/png"
    ),
    period: Annotated[
        list[str] | None,
        typer.Option("--period", "-p", help="day, week, month or year (default: all four)."),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(
            "--start", help="Custom start instead of periods (rrdtool time, e.g. -15min)."
        ),
    ] = None,
) -> None:
    """Draw PNG graphs (users, connections, messages, bytes) of every RRD file in --dir."""
    files = sorted(dir.glob("*.rrd"))
    if not files:
        raise fail(f"{dir}: no .rrd files (run `pushgrid rrd feed` first)", 2)
    spans = _spans(period, start)
    out.mkdir(parents=True, exist_ok=True)
    try:
        for path in files:
            for label, begin in spans.items():
                for chart in rrd.CHARTS:
                    png = out / f"{path.stem}-{chart.name}-{label}.png"
                    rrd.run_once(rrd.graph_args(path, png, chart, path.stem, begin))
                    typer.echo(str(png))
    except rrd.RrdError as exc:
        raise fail(f"rrdtool: {exc}") from None


def _spans(periods: list[str] | None, start: str | None) -> dict[str, str]:
    if start is not None:
        return {"custom": start}
    chosen = periods or list(rrd.PERIODS)
    unknown = [p for p in chosen if p not in rrd.PERIODS]
    if unknown:
        raise fail(f"--period {unknown[0]!r}: choose from {', '.join(rrd.PERIODS)}", 2)
    return {p: rrd.PERIODS[p] for p in chosen}
