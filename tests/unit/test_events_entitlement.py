"""Issue 34 (2.4): the event meta-subjects follow only for a token entitled to every subject
their events can name (server/core/entitlement.py)."""

from __future__ import annotations

import pytest

from pushgrid.server.core.entitlement import ALLOW_ALL, Grant, covers, events_denial


@pytest.mark.parametrize(
    ("grant", "pattern", "want"),
    [
        ("*", "*", True),
        ("*", "/Chat/*", True),
        ("/*", "*", True),
        ("/Chat/*", "/Chat/*", True),
        ("/Chat/*", "/Chat/secret/*", True),
        ("/Chat/*", "*", False),
        ("/Chat/public/*", "/Chat/*", False),
        ("/Chat/*/room", "/Chat/*", False),
        ("/Chat/*/room", "/Chat/*/room", True),
        ("/Chat/a", "/Chat/*", False),
        ("/Chat/a", "/Chat/a", True),
        ("/Chat/a/b", "/Chat/a", False),
        ("/Chat/*/*", "/Chat/a/*", True),
    ],
)
def test_covers(grant: str, pattern: str, want: bool) -> None:
    assert covers(grant, pattern) is want


def test_events_denial_needs_every_subject_the_events_can_name() -> None:
    chat = Grant(subscribe=("/Chat/*", "/pushgrid/presence"), publish=())
    partial = Grant(subscribe=("/Chat/public/*", "/pushgrid/*"), publish=())
    patterns = ("/Chat/*",)
    assert events_denial(chat, "/pushgrid/presence", patterns) is None
    assert events_denial(partial, "/pushgrid/presence", patterns) is not None
    assert events_denial(chat, "/pushgrid/occupancy", patterns) is not None
    assert events_denial(ALLOW_ALL, "/pushgrid/occupancy", patterns) is None
    assert events_denial(partial, "/Chat/public/x", patterns) is None, "other subjects: as before"
