"""The server raises its soft open-file limit to the hard limit (one fd per connection)."""

from __future__ import annotations

import resource

from pushgrid.server.rlimits import raise_open_file_limit


def test_soft_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        old, new = raise_open_file_limit()
        assert old == lowered
        expected = lowered if hard == resource.RLIM_INFINITY else hard
        assert new == expected
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == expected
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
