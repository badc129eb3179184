"""Cross-check: the pipeline's second-resolution windows against a member's own live windows.

A member with the archive on writes each second's sample to its archive file *before* it
computes its live window statistics for that second (``metrics.sampler``), so both come from
the same samples: as of the member's last second ``T``, the pipeline's ``1m`` / ``5m`` / ``15m``
statistics of scope ``node:<member>`` must equal the live ones (count and max exactly, average
and standard deviation to float precision: the live windows use float moments, the pipeline
exact integer sums).

One exception is not a disagreement: the live windows only hold samples since the member
started, the archive also those of its previous life. A window that starts before the member's
start and has more archived samples than live ones is reported as ``restarted``.

:func:`fetch_live` reads ``<monitoring URL>/stats?format=json``; :func:`compare` is the pure
comparison; ``pushgrid stats verify`` (``spark_stats.cli``) runs the pipeline as of ``T`` and
prints the result.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import httpx

from pushgrid.metrics.window_spec import window_start
from pushgrid.protocol.exceptions import StatsError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SECOND_WINDOWS", "Check", "LiveWindows", "VerifyError", "compare", "fetch_live"]

#: The windows of second resolution: the live member keeps their raw samples.
SECOND_WINDOWS: Final = ("1m", "5m", "15m")
AVG_REL: Final = 1e-12
STDDEV_REL: Final = 1e-9

Stat = tuple[int, float | None, float | None, float | None]  # count, max, avg, stddev
Outcome = Literal["equal", "different", "restarted"]


class VerifyError(StatsError):
    """The member cannot be read, or its answer is not a /stats document."""

    code = "verify"


@dataclass(frozen=True)
class LiveWindows:
    """A member's live window statistics as of its last sampled second ``ts``."""

    server: str
    ts: int
    uptime: float
    stats: dict[tuple[str, str], Stat]  # (indicator, window) -> stat

    @property
    def started(self) -> float:
        """The member's first second, approximately (``ts - uptime``)."""
        return self.ts - self.uptime

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> LiveWindows:
        try:
            stats: dict[tuple[str, str], Stat] = {}
            for indicator, body in document["indicators"].items():
                for window, s in body["windows"].items():
                    stats[(indicator, window)] = (
                        int(s["count"]),
                        s["max"],
                        s["avg"],
                        s["stddev"],
                    )
            return cls(
                str(document["server"]), int(document["ts"]), float(document["uptime"]), stats
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise VerifyError(f"not a pushgrid /stats document (missing {exc})") from None


def fetch_live(monitor_url: str, timeout: float = 10.0) -> LiveWindows:
    """GET ``<monitor_url>/stats?format=json`` of a running member."""
    parts = urllib.parse.urlsplit(monitor_url.rstrip("/"))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise VerifyError(f"{monitor_url!r} is not an http(s) URL of a member's monitoring port")
    # credentials in the URL (http://user:password@host:port) become HTTP Basic authentication
    netloc = parts.netloc.rsplit("@", 1)[-1]
    url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path + "/stats", "format=json", ""))
    auth = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        auth = httpx.BasicAuth(user, urllib.parse.unquote(parts.password or ""))
    try:
        answer = httpx.get(url, auth=auth, timeout=timeout, trust_env=False)
    except httpx.HTTPError as exc:
        raise VerifyError(f"cannot read {url}: {exc}") from None
    if answer.status_code != 200:
        raise VerifyError(f"{url}: HTTP {answer.status_code} {answer.reason_phrase}")
    try:
        document = answer.json()
    except json.JSONDecodeError as exc:
        raise VerifyError(f"{url}: not JSON ({exc.msg})") from None
    if not isinstance(document, dict):
        raise VerifyError(f"{url}: not a pushgrid /stats document")
    return LiveWindows.from_document(document)


@dataclass(frozen=True)
class Check:
    indicator: str
    window: str
    live: Stat
    pipeline: Stat
    outcome: Outcome
    detail: str = ""


def _close(a: float | None, b: float | None, rel: float) -> bool:
    if a is None or b is None or (isinstance(b, float) and math.isnan(b)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def _differences(live: Stat, pipeline: Stat) -> list[str]:
    names = ("count", "max", "avg", "stddev")
    out = []
    if live[0] != pipeline[0]:
        out.append(f"count {live[0]} != {pipeline[0]}")
    if live[0] == 0 and pipeline[0] == 0:
        return out
    if not _close(live[1], pipeline[1], 0.0):
        out.append(f"max {live[1]} != {pipeline[1]}")
    for k, rel in ((2, AVG_REL), (3, STDDEV_REL)):
        if not _close(live[k], pipeline[k], rel):
            out.append(f"{names[k]} {live[k]!r} != {pipeline[k]!r}")
    return out


def pipeline_stats(window_stats: pd.DataFrame, node: str) -> dict[tuple[str, str], Stat]:
    """(indicator, window) -> stat of scope ``node:<node>`` from the pipeline's window stats."""
    rows = window_stats[window_stats["scope"] == f"node:{node}"]
    out: dict[tuple[str, str], Stat] = {}
    for r in rows.itertuples(index=False):
        count = int(r.count)
        out[(str(r.indicator), str(r.window))] = (
            count,
            None if count == 0 else float(r.max),
            None if count == 0 else float(r.avg),
            None if count == 0 else float(r.stddev),
        )
    return out


def compare(
    live: LiveWindows,
    pipeline: Mapping[tuple[str, str], Stat],
    windows: Iterable[str] = SECOND_WINDOWS,
) -> list[Check]:
    """One :class:`Check` per indicator of the member and window of ``windows``."""
    checks: list[Check] = []
    wanted = tuple(windows)
    for indicator, window in sorted(k for k in live.stats if k[1] in wanted):
        mine = live.stats[(indicator, window)]
        theirs = pipeline.get((indicator, window), (0, None, None, None))
        problems = _differences(mine, theirs)
        outcome: Outcome = "different" if problems else "equal"
        detail = "; ".join(problems)
        if problems and theirs[0] > mine[0] and window_start(window, live.ts) < live.started:
            outcome = "restarted"
            detail = (
                f"the member started {live.ts - live.started:.0f} s ago, within the window: "
                f"the archive also holds {theirs[0] - mine[0]} samples of its previous run"
            )
        checks.append(Check(indicator, window, mine, theirs, outcome, detail))
    return checks
