"""Subject syntax (spec 4.1.1, Table 4.2).

A subject is ``/`` followed by two or more non-empty segments separated by single ``/``:
``/Stocks/NYSE/IBM``. Segments may hold any Unicode text except ``/`` and the characters that
do not show: control (Cc), format (Cf: zero-width space/joiners, bidi overrides, BOM...),
surrogate (Cs), private-use (Co), unassigned (Cn), line and paragraph separators (Zl, Zp). Two
subjects that look the same are then the same subject. One exception: a zero-width joiner
(U+200D) between two symbols, as inside an emoji ZWJ sequence (👨‍👩‍👧), where it does show.
"""

from __future__ import annotations

import unicodedata

from .errors import InvalidSubject

MAX_SUBJECT_BYTES = 1024


def subject_error(subject: object) -> str | None:
    """Why ``subject`` is not valid, or None when it is (for callers that want no exception)."""
    if not isinstance(subject, str):
        return "a subject must be a string"
    if not subject.startswith("/"):
        return "a subject must start with '/'"
    if subject == "/":
        return "a subject needs two or more segments, '/' is a single empty segment"
    if subject.endswith("/"):
        return "the last segment is empty (trailing '/')"
    if len(subject.encode("utf-8", "surrogatepass")) > MAX_SUBJECT_BYTES:
        return f"a subject may hold at most {MAX_SUBJECT_BYTES} bytes of UTF-8"
    segments = subject[1:].split("/")
    if any(segment == "" for segment in segments):
        return "a segment is empty ('//' is not allowed)"
    if len(segments) < 2:
        return "a subject needs two or more segments"
    for index, ch in enumerate(subject):
        category = unicodedata.category(ch)
        if category in _INVISIBLE and not _emoji_joiner(subject, index):
            return f"a subject may not contain {_INVISIBLE[category]} characters (U+{ord(ch):04X})"
    return None


def _emoji_joiner(subject: str, index: int) -> bool:
    """A ZWJ joining two emoji: after a symbol (or its modifier / variation selector) and
    before a symbol."""
    if subject[index] != "\u200d" or index == 0 or index + 1 >= len(subject):
        return False
    before = unicodedata.category(subject[index - 1])
    return before in ("So", "Sk", "Mn") and unicodedata.category(subject[index + 1]) == "So"


# Unicode categories refused in subjects, with the name the error message uses.
_INVISIBLE = {
    "Cc": "control",
    "Cf": "format (invisible)",
    "Cs": "surrogate",
    "Co": "private-use",
    "Cn": "unassigned",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}


def validate_subject(subject: object, request_id: int | None = None) -> str:
    """Return ``subject`` unchanged or raise :class:`InvalidSubject` naming the reason (its
    ``message`` is the one wording of the error: :func:`invalid_subject_message`). With
    :func:`subject_error` (the reason, no exception) the one pair of subject validators."""
    reason = subject_error(subject)
    if reason is not None or not isinstance(subject, str):
        raise InvalidSubject(subject, reason or "a subject must be a string", request_id)
    return subject


# -- subject patterns -------------------------------------------------------------------------
# One pattern syntax for the whole server: entitlement permissions (server/core/entitlement.py)
# and watched subjects (server/core/watch.py). A segment ``*`` matches any one segment; a last
# segment ``*`` also matches any deeper path (``/Stocks/*`` covers ``/Stocks/NYSE`` and
# ``/Stocks/NYSE/IBM``); the pattern ``*`` alone matches every subject.

ANY_SUBJECT = "*"


def pattern_matches(pattern: str, subject: str) -> bool:
    """Whether ``subject`` is covered by ``pattern`` (the syntax above)."""
    if pattern == ANY_SUBJECT:
        return True
    pattern_parts = pattern.split("/")
    subject_parts = subject.split("/")
    last = len(pattern_parts) - 1
    for index, part in enumerate(pattern_parts):
        if index >= len(subject_parts):
            return False
        if part == "*":
            if index == last:
                return True
            continue
        if part != subject_parts[index]:
            return False
    return len(pattern_parts) == len(subject_parts)


def pattern_error(pattern: object) -> str | None:
    """Why ``pattern`` is not a valid subject pattern, or None when it is: ``*``, or a subject
    whose segments may be ``*`` (a subject's rules otherwise: leading ``/``, two or more
    non-empty segments, no invisible characters, at most MAX_SUBJECT_BYTES)."""
    if pattern == ANY_SUBJECT:
        return None
    reason = subject_error(pattern)
    if reason is not None:
        return reason.replace("a subject", "a pattern")
    return None
