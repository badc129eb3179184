"""The close-code table lives in one place, ``CLOSE_REACTIONS`` (pushgrid/protocol/errors.py,
next to the server's ``CloseCode``); the Python client's rules are built from it, and the other
copies are checked against it: the browser client's CLOSE_RULES (client/js/pushgrid.js) and
docs/protocol.md section 8.2 (its codes and its "client should" column)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pushgrid.client import closecodes
from pushgrid.protocol.errors import (
    CLOSE_REACTIONS,
    NO_CLOSE_REACTION,
    UNKNOWN_CLOSE_REACTION,
    CloseCode,
    Reaction,
)

ROOT = Path(__file__).resolve().parents[2]
#: codes a client sees that no server sends (reported by the WebSocket library)
LIBRARY_ONLY = {1006}
#: the browser client's names of the reactions
JS_NAMES = {
    Reaction.BACKOFF: "BACKOFF",
    Reaction.OTHER_SERVER: "OTHER_SERVER",
    Reaction.IMMEDIATE_OTHER: "IMMEDIATE_OTHER",
    Reaction.STOP: "STOP",
}


def _browser_source() -> str:
    return (ROOT / "client" / "js" / "pushgrid.js").read_text(encoding="utf-8")


def _browser_rules() -> dict[int, str]:
    body = re.search(r"const CLOSE_RULES = \{(.*?)\};", _browser_source(), re.S)
    assert body is not None, "CLOSE_RULES not found in pushgrid.js"
    return {int(code): rule for code, rule in re.findall(r"(\d{4}): ([A-Z_]+)", body.group(1))}


def _documented() -> dict[int, str]:
    """docs/protocol.md 8.2: code -> its "client should" cell."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text.split("### 8.2 Close codes sent by the server", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| (\d{4}) \|(.*)\|$", section, re.M)
    return {int(code): cells.split("|")[-1].strip() for code, cells in rows}


def _documented_reaction(advice: str) -> Reaction:
    """The reaction a "client should" cell describes, by the words the table uses."""
    if "do not retry" in advice:
        return Reaction.STOP
    if "at once" in advice:
        return Reaction.IMMEDIATE_OTHER
    if "another server" in advice:
        return Reaction.OTHER_SERVER
    return Reaction.BACKOFF


def test_the_table_covers_every_code_the_server_sends() -> None:
    assert set(CLOSE_REACTIONS) == {int(code) for code in CloseCode} | LIBRARY_ONLY


def test_every_code_the_server_sends_is_documented_with_its_reaction() -> None:
    documented = _documented()
    assert set(documented) == {int(code) for code in CloseCode}
    reactions = {code: _documented_reaction(advice) for code, advice in documented.items()}
    assert reactions == {code: CLOSE_REACTIONS[code] for code in documented}


def test_the_python_client_follows_the_table() -> None:
    for code, reaction in CLOSE_REACTIONS.items():
        assert closecodes.rule_for_close(code) is closecodes.RULE_OF[reaction]
    assert closecodes.rule_for_close(None) is closecodes.RULE_OF[NO_CLOSE_REACTION]
    assert closecodes.rule_for_close(4999) is closecodes.RULE_OF[UNKNOWN_CLOSE_REACTION]


def test_the_browser_client_follows_the_table() -> None:
    assert _browser_rules() == {code: JS_NAMES[r] for code, r in CLOSE_REACTIONS.items()}
    fallback = re.search(
        r"code == null \? (\w+) : CLOSE_RULES\[code\] \|\| (\w+)", _browser_source()
    )
    assert fallback is not None, "ruleForClose not found in pushgrid.js"
    assert fallback.groups() == (JS_NAMES[NO_CLOSE_REACTION], JS_NAMES[UNKNOWN_CLOSE_REACTION])


@pytest.mark.parametrize("reaction", list(Reaction))
def test_each_reaction_reads_as_the_rule_it_builds(reaction: Reaction) -> None:
    rule = closecodes.RULE_OF[reaction]
    assert _documented_reaction(reaction.value) is reaction
    assert rule.retry is (reaction is not Reaction.STOP)
    assert rule.immediate is (reaction is Reaction.IMMEDIATE_OTHER)
    assert rule.avoid_server is (reaction in (Reaction.OTHER_SERVER, Reaction.IMMEDIATE_OTHER))
