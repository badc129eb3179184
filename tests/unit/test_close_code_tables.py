"""The close-code table lives in three places that must agree: the server's ``CloseCode``
(pushgrid/protocol/errors.py), the clients' rules (client/closecodes.py and the browser client's
CLOSE_RULES in client/js/pushgrid.js) and docs/protocol.md section 8.2."""

from __future__ import annotations

import re
from pathlib import Path

from pushgrid.client import closecodes
from pushgrid.protocol.errors import CloseCode

ROOT = Path(__file__).resolve().parents[2]
#: codes a client sees that no server sends (reported by the WebSocket library)
LIBRARY_ONLY = {1006}
RULE_NAMES = {
    closecodes.BACKOFF: "BACKOFF",
    closecodes.OTHER_SERVER: "OTHER_SERVER",
    closecodes.IMMEDIATE_OTHER: "IMMEDIATE_OTHER",
    closecodes.STOP: "STOP",
}


def _python_rules() -> dict[int, str]:
    return {int(code): RULE_NAMES[rule] for code, rule in closecodes._RULES.items()}


def _browser_rules() -> dict[int, str]:
    text = (ROOT / "client" / "js" / "pushgrid.js").read_text(encoding="utf-8")
    body = re.search(r"const CLOSE_RULES = \{(.*?)\};", text, re.S)
    assert body is not None, "CLOSE_RULES not found in pushgrid.js"
    return {int(code): rule for code, rule in re.findall(r"(\d{4}): ([A-Z_]+)", body.group(1))}


def _documented_codes() -> set[int]:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text.split("### 8.2 Close codes sent by the server", 1)[1].split("\n#", 1)[0]
    return {int(code) for code in re.findall(r"^\| (\d{4}) \|", section, re.M)}


def test_every_code_the_server_sends_is_documented() -> None:
    assert _documented_codes() == {int(code) for code in CloseCode}


def test_the_python_client_has_a_rule_for_every_code() -> None:
    assert set(_python_rules()) == {int(code) for code in CloseCode} | LIBRARY_ONLY


def test_the_browser_client_follows_the_same_rules() -> None:
    assert _browser_rules() == _python_rules()


def test_the_python_docstring_table_lists_every_rule() -> None:
    listed = {int(code) for code in re.findall(r"^(\d{4}) ", closecodes.__doc__ or "", re.M)}
    assert listed == {int(code) for code in CloseCode}
