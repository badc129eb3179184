"""Subject syntax (spec 4.1.1, Table 4.2).

A subject is ``/`` followed by two or more non-empty segments separated by single ``/``:
``/Stocks/NYSE/IBM``. Segments may hold any Unicode text except ``/``.
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
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in subject):
        return "a subject may not contain control characters"
    return None


def validate_subject(subject: str, request_id: int | None = None) -> str:
    """Return ``subject`` unchanged or raise :class:`InvalidSubject` naming the reason."""
    reason = subject_error(subject)
    if reason is not None:
        raise InvalidSubject(str(subject), reason, request_id)
    return subject
