"""The window definition: names, lengths, resolutions and bucket levels, as data. Pure.

Every consumer reads this module -- the live rolling windows (:mod:`metrics.rolling_windows`),
the statistics pipeline (:mod:`spark_stats.window_assembly`), the admin API, the console and the
monitoring views -- so a window is defined once.

Window definition
-----------------
Window names, lengths ``W`` and resolutions ``r`` (a month is 30 days)::

    "1m"   60 s       r = 1 s        "1d"   86400 s     r = 3600 s
    "5m"   300 s      r = 1 s        "5d"   432000 s    r = 3600 s
    "15m"  900 s      r = 1 s        "15d"  1296000 s   r = 3600 s
    "1h"   3600 s     r = 60 s       "1mo"  2592000 s   r = 86400 s
    "5h"   18000 s    r = 60 s       "5mo"  12960000 s  r = 86400 s
    "15h"  54000 s    r = 60 s       "15mo" 38880000 s  r = 86400 s

At query time ``now`` (integer seconds), the window of length ``W`` and resolution ``r`` covers
exactly the samples whose timestamp ``ts`` satisfies::

    (floor(now / r) - (W / r - 1)) * r  <=  ts  <=  now

that is, the current (partial) bucket of ``r`` seconds containing ``now`` plus the ``W / r - 1``
previous whole buckets. Buckets are aligned to the Unix epoch (UTC): a minute bucket starts at a
multiple of 60, an hour bucket at a multiple of 3600, a day bucket at UTC midnight (a multiple of
86400). So "1m" is the last 60 seconds ``[now - 59, now]``; "1h" is the current minute so far plus
the 59 minutes before it; "1d" the current hour so far plus the 23 hours before it; "1mo" the
current UTC day so far plus the 29 days before it. :func:`window_start` computes the lower bound.

Missing seconds are *absent*, not zero: a window's ``count`` is the number of samples it really
covers and its statistics are those of these samples only. A window without samples is
:meth:`Moments.empty` (``count == 0``).

Coverage
--------
At ``now`` a window spans ``span = now - window_start + 1`` seconds (between ``W - r + 1`` and
``W``: its current bucket is partial). Its *coverage* is ``count / span``, the share of those
seconds that had a sample: 1.0 for a member that sampled every second of the window, 4 / 1440
for a "1d" window over 4 minutes of data. ``avg`` and ``stddev`` are the mean and population
standard deviation of the ``count`` samples present, so a window with low coverage describes
those seconds only, never the whole window; below :data:`LOW_COVERAGE` every view marks it.

Levels and pieces
-----------------
The resolutions form four bucket *levels* (:data:`LEVELS`: ``s``, ``m``, ``h``, ``d``); a level
keeps as many buckets as the longest window of its resolution needs (``W / r``: 900, 900, 360,
450). As of ``now`` a window is the sum of disjoint pieces (:func:`pieces`): the whole buckets of
its own level before the current one, then the current (partial) bucket taken from the finer
levels -- the whole hours of the current day, the whole minutes of the current hour and the
seconds of the current minute up to ``now``. When a window ends on an hour boundary (the
pipeline's hourly trend points) its current bucket is made of whole minutes and hours, and
:func:`whole_pieces` reads them from the coarsest level that holds them whole.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "DAY",
    "HOUR",
    "LEVELS",
    "LOW_COVERAGE",
    "MAX_BUCKETS",
    "MINUTE",
    "MONTH",
    "WINDOWS",
    "WINDOW_NAMES",
    "Level",
    "Piece",
    "Window",
    "coverage",
    "level_of",
    "pieces",
    "span",
    "whole_pieces",
    "window_start",
    "windows_of",
]

MINUTE = 60
HOUR = 3600
DAY = 86400
MONTH = 30 * DAY


class Window(NamedTuple):
    name: str
    length: int  # W, seconds
    resolution: int  # r, seconds; W is a multiple of r

    @property
    def buckets(self) -> int:
        """``W / r``: the current partial bucket plus ``W / r - 1`` whole ones."""
        return self.length // self.resolution


WINDOWS: tuple[Window, ...] = (
    Window("1m", MINUTE, 1),
    Window("5m", 5 * MINUTE, 1),
    Window("15m", 15 * MINUTE, 1),
    Window("1h", HOUR, MINUTE),
    Window("5h", 5 * HOUR, MINUTE),
    Window("15h", 15 * HOUR, MINUTE),
    Window("1d", DAY, HOUR),
    Window("5d", 5 * DAY, HOUR),
    Window("15d", 15 * DAY, HOUR),
    Window("1mo", MONTH, DAY),
    Window("5mo", 5 * MONTH, DAY),
    Window("15mo", 15 * MONTH, DAY),
)
WINDOW_NAMES: tuple[str, ...] = tuple(w.name for w in WINDOWS)
_BY_NAME = {w.name: w for w in WINDOWS}


class Level(NamedTuple):
    """One bucket level: ``name`` keys bucket frames in the pipeline; ``size`` is the number of
    buckets the longest window of this resolution spans (``W / r``)."""

    name: str
    resolution: int
    size: int


_LEVEL_NAMES = {1: "s", MINUTE: "m", HOUR: "h", DAY: "d"}


def _levels() -> tuple[Level, ...]:
    """The levels, finest first, derived from :data:`WINDOWS` (one per resolution)."""
    resolutions = sorted({w.resolution for w in WINDOWS})
    return tuple(
        Level(_LEVEL_NAMES[r], r, max(w.buckets for w in WINDOWS if w.resolution == r))
        for r in resolutions
    )


#: Second, minute, hour and day levels, finest first: sizes 900, 900, 360, 450.
LEVELS: tuple[Level, ...] = _levels()
MAX_BUCKETS = sum(level.size for level in LEVELS)  # 2610


def windows_of(level: Level) -> tuple[Window, ...]:
    """The windows of ``level``'s resolution, shortest first."""
    return tuple(w for w in WINDOWS if w.resolution == level.resolution)


def level_of(window: Window | str) -> Level:
    """The level whose buckets make up ``window`` (the one of its resolution)."""
    w = _window(window)
    return next(level for level in LEVELS if level.resolution == w.resolution)


def window_start(window: Window | str, now: int) -> int:
    """Smallest timestamp covered by ``window`` at ``now``: ``(now // r - (W // r - 1)) * r``."""
    w = _window(window)
    return (now // w.resolution - (w.buckets - 1)) * w.resolution


#: Below this coverage a window's statistics are marked partial in every view (the admin API's
#: ``low_coverage``, the console): 90% allows a member's restart or a few missed samples.
LOW_COVERAGE = 0.9


def span(window: Window | str, now: int) -> int:
    """Seconds ``window`` spans at ``now``: ``now - window_start + 1`` (its last bucket is
    partial, so from ``W - r + 1`` to ``W``)."""
    return now - window_start(window, now) + 1


def coverage(window: Window | str, count: int, now: int) -> float:
    """Share of the window's seconds at ``now`` that hold a sample (0.0 to 1.0)."""
    if count <= 0:
        return 0.0
    return min(1.0, count / span(window, now))


class Piece(NamedTuple):
    """The buckets of ``level`` with ``start <= bucket_start < end``."""

    level: Level
    start: int
    end: int


def pieces(window: Window | str, now: int) -> tuple[Piece, ...]:
    """The disjoint pieces that make up ``window`` as of ``now``, coarsest first.

    Together they cover exactly ``[window_start(window, now), now]``; a bucket that extends past
    ``now`` is never used whole (see "Levels and pieces" above).
    """
    own = LEVELS.index(level_of(window))
    out = []
    start = window_start(window, now)
    for level in reversed(LEVELS[: own + 1]):
        # the start of the current bucket of this level ends the piece (seconds: now itself)
        end = now + 1 if level.resolution == 1 else now - now % level.resolution
        out.append(Piece(level, start, end))
        start = end
    return tuple(out)


def whole_pieces(window: Window | str, end: int, coarsest: int = HOUR) -> tuple[Piece, ...]:
    """The pieces of ``window`` as of ``end - 1`` (``end`` a bucket boundary: an hour end for
    the trend points), each read from the coarsest level it fills whole, merged where adjacent.

    Levels coarser than ``coarsest`` seconds are used only for the window's own buckets (month
    windows keep their day buckets; the current day comes from hours).
    """
    out: list[Piece] = []
    for piece in pieces(window, end - 1):
        piece = _lift(piece, max(coarsest, piece.level.resolution))
        while out and out[-1].level == piece.level:
            merged = Piece(piece.level, out.pop().start, piece.end)
            piece = _lift(merged, max(coarsest, piece.level.resolution))
        out.append(piece)
    return tuple(out)


def _lift(piece: Piece, coarsest: int) -> Piece:
    """``piece`` on the coarsest level (up to ``coarsest`` s) whose buckets it fills whole."""
    for level in reversed(LEVELS):
        r = level.resolution
        if r <= coarsest and piece.start % r == 0 and piece.end % r == 0:
            return Piece(level, piece.start, piece.end)
    return piece  # pragma: no cover - seconds divide every bound


def _window(window: Window | str) -> Window:
    return _BY_NAME[window] if isinstance(window, str) else window
