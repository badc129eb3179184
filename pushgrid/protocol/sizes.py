"""How MaxMessageSize and MaxSnapshotSize count a message: pure, no encoding.

Its own module so the engine can bound snapshots without importing the codec (the engine
returns values and never touches the wire: tests/unit/test_import_rules.py).
"""

from __future__ import annotations

from collections.abc import Mapping


def message_size(content: str, fields: Mapping[str, str]) -> int:
    """Size of a message as MaxMessageSize counts it: UTF-8 bytes of content, field names and
    values (lone surrogates count as their 3 bytes, never as an encoding error)."""
    return utf8_len(content) + sum(utf8_len(k) + utf8_len(v) for k, v in fields.items())


def utf8_len(text: str) -> int:
    """UTF-8 bytes of ``text`` (ASCII without encoding: one byte a character)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
