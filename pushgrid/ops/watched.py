"""The WatchedSubjects MBean's ``Document`` (``pushgrid:type=WatchedSubjects``): per watched
pattern its totals, subscribers, subjects and six indicators with their windows.
``server/core/watch.py`` and ``metrics/watched.py`` build it; the admin API decodes it into
:class:`WatchedSubjectsDocument`."""

from __future__ import annotations

import msgspec

from .indicator import WindowMoments


class WatchedIndicatorDocument(msgspec.Struct, frozen=True, kw_only=True):
    current: float
    unit: str
    windows: dict[str, WindowMoments] = msgspec.field(default_factory=dict)


class WatchedPatternDocument(msgspec.Struct, frozen=True, kw_only=True):
    pattern: str
    source: str  # config (WatchedSubjects.Patterns) or runtime (the admin API)
    ts: int  # UTC second of the last per-second values
    windows_ts: int  # UTC second the windows were read for
    totals: dict[str, int]
    subscribers: int
    subjects: int
    indicators: dict[str, WatchedIndicatorDocument]
    added_at: float | None = None


class WatchedSubjectsDocument(msgspec.Struct, frozen=True, kw_only=True):
    max_patterns: int = 0
    cache_size: int = 0
    cached_subjects: int = 0
    patterns: list[WatchedPatternDocument] = msgspec.field(default_factory=list)
