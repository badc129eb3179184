"""The Audit page's time range and paging (issue 35 item 5): pure parts."""

from __future__ import annotations

import pytest

from pushgrid.console.dev_provider import DemoProvider
from pushgrid.console.pages.audit import LIMIT, audit_filter, next_offset, parse_moment
from pushgrid.console.provider import AuditFilter


def test_a_typed_time_is_utc_unless_it_names_a_zone() -> None:
    assert parse_moment("2026-11-28 02:00", "from") == "2026-11-28T02:00:00+00:00"
    assert parse_moment("2026-11-28T02:00:00Z", "to") == "2026-11-28T02:00:00+00:00"
    assert parse_moment("2026-11-28T03:00+01:00", "to") == "2026-11-28T03:00:00+01:00"
    assert parse_moment("  ", "from") is None
    with pytest.raises(ValueError, match=r"^from: 'yesterday' is not a time"):
        parse_moment("yesterday", "from")


def test_from_replaces_the_relative_since_and_to_bounds_the_end() -> None:
    relative = audit_filter("ann", "", "denied", 3600, now=7200.0)
    assert relative == AuditFilter("ann", None, "denied", "1970-01-01T01:00:00+00:00", None)
    ranged = audit_filter(None, None, None, 3600, 7200.0, "2026-11-28 01:00", "2026-11-28 02:00")
    assert ranged.params() == {
        "since": "2026-11-28T01:00:00+00:00",
        "until": "2026-11-28T02:00:00+00:00",
    }


def test_paging_moves_a_page_and_stops_at_the_ends() -> None:
    assert next_offset(0, LIMIT, "older") == LIMIT
    assert next_offset(LIMIT, LIMIT - 1, "older") == LIMIT  # a short page was the last
    assert next_offset(LIMIT, LIMIT, "newer") == 0
    assert next_offset(None, LIMIT, "newer") == 0


def test_the_dev_provider_pages_and_bounds_like_the_api() -> None:
    provider = DemoProvider()
    every = provider.audit(1000)
    assert [e.id for e in provider.audit(2, offset=1)] == [e.id for e in every[1:3]]
    newest = every[0].at
    assert all(e.at < newest for e in provider.audit(1000, AuditFilter(until=newest.isoformat())))
