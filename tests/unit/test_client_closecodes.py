"""Client reaction per close code, as the protocol's close-code table says."""

from __future__ import annotations

import pytest

from pushgrid.client.closecodes import rule_for_close


@pytest.mark.parametrize("code", [1002, 4005])
def test_do_not_retry(code: int) -> None:
    assert not rule_for_close(code).retry


@pytest.mark.parametrize("code", [1001, 4007])
def test_going_away_and_cluster_isolated_reconnect_at_once_elsewhere(code: int) -> None:
    rule = rule_for_close(code)
    assert rule.retry
    assert rule.immediate
    assert rule.avoid_server


@pytest.mark.parametrize("code", [1011, 4003, 4004, 1006, None])
def test_other_server_with_backoff(code: int | None) -> None:
    rule = rule_for_close(code)
    assert rule.retry
    assert not rule.immediate
    assert rule.avoid_server


@pytest.mark.parametrize("code", [1000, 1009, 4001, 4002, 4999, 3000])
def test_same_pool_with_backoff(code: int) -> None:
    rule = rule_for_close(code)
    assert rule.retry
    assert not rule.immediate
    assert not rule.avoid_server
