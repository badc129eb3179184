"""The HotSubjects MBean's ``Document`` (``pushgrid:type=HotSubjects``): the member's top subjects
by incoming and outgoing messages/s, outgoing bytes/s (estimates with an error bound, from
SpaceSaving sketches) and local subscribers (exact). ``metrics/hotsubjects.py`` builds it; the
admin API decodes it into :class:`HotSubjectsDocument`."""

from __future__ import annotations

import msgspec


class HotEntryDocument(msgspec.Struct, frozen=True, kw_only=True):
    """One subject of a ranking, largest first."""

    subject: str
    value: float  # a rate per second (subscribers: the count)
    error: float  # the value over-estimates the truth by at most this
    history: list[float] = msgspec.field(default_factory=list)  # last per-second estimates


class HotSubjectsDocument(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the HotSubjects MBean's scalar attributes show, as one map."""

    rankings: dict[str, list[HotEntryDocument]]  # messages_in, messages_out, bytes_out, ...
    ts: int = 0  # UTC second of the last fold (0: none yet)
    top_n: int = 0
    capacity: int = 0
    window: float = 0.0  # seconds: the rates' averaging time constant
    units: dict[str, str] = msgspec.field(default_factory=dict)
    error_bounds: dict[str, float] = msgspec.field(default_factory=dict)
