"""The windows an alert rule may read: one list (pushgrid/ops/alerts.py ``RuleWindow``) that the
admin API's validation and the console's rule form both use, equal to the window definition
(issue 35 item 4: the form offered up to 1 h while the API accepts up to 15 months)."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import ValidationError

from pushgrid.admin_api.schemas_ops import RuleIn, RulePatch
from pushgrid.console.pages import alerts
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops.alerts import RULE_WINDOWS


def _rule(**changes: Any) -> dict[str, Any]:
    return {"name": "Busy", "indicator": "connected_users", "threshold": 1, **changes}


def test_the_form_offers_exactly_the_windows_the_api_accepts() -> None:
    assert ("current", *WINDOW_NAMES) == RULE_WINDOWS
    assert tuple(alerts.WINDOWS) == RULE_WINDOWS
    schema = RuleIn.model_json_schema()["properties"]["window"]
    assert tuple(schema["enum"]) == RULE_WINDOWS
    for window in RULE_WINDOWS:
        assert RuleIn.model_validate(_rule(window=window)).window == window
        assert RulePatch.model_validate({"window": window}).window == window


@pytest.mark.parametrize("window", ["30s", "2h", "16mo", "1y", ""])
def test_a_window_outside_the_list_is_refused(window: str) -> None:
    with pytest.raises(ValidationError, match="window"):
        RuleIn.model_validate(_rule(window=window))


def test_the_rendered_form_lists_every_window() -> None:
    form = str(alerts.layout())
    assert all(f"'{w}'" in form for w in RULE_WINDOWS)
    assert get_args(RuleIn.model_fields["window"].annotation) == RULE_WINDOWS
