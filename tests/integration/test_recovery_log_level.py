"""A recovery is news, not a warning (issue 34 item 4.12: "member m1 is up" was logged at
WARNING). The admin API's member watch sees a member go down and come back against a real
server: the loss is a WARNING, the return an INFO line."""

from __future__ import annotations

import logging

import pytest

from pushgrid.admin_api.member_client import MemberEndpoint, new_http_client
from pushgrid.admin_api.services.cluster import MemberWatch

from .pgtest import ServerProcess, free_port


async def test_a_member_coming_back_is_logged_at_info(
    server: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"  # nothing listens: refused, down at once
    watched = [MemberEndpoint(name="m9", monitor_url=server.monitor_url, source="config")]
    watch = MemberWatch(lambda: watched)
    async with new_http_client(timeout=2.0) as http:
        assert await watch.look(http) == []
        with caplog.at_level(logging.INFO, logger="pushgrid.admin"):
            watched[0] = MemberEndpoint(name="m9", monitor_url=nobody, source="config")
            assert await watch.look(http) == [("m9", "down")]
            watched[0] = MemberEndpoint(name="m9", monitor_url=server.monitor_url, source="config")
            assert await watch.look(http) == [("m9", "up")]
    said = [(r.levelno, r.getMessage()) for r in caplog.records if "m9" in r.getMessage()]
    assert said == [
        (logging.WARNING, "member m9 is down: its monitoring port does not answer"),
        (logging.INFO, "member m9 is up"),
    ]
