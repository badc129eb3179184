"""Pure parts of the publish / subscribe commands: --field parsing and the output line."""

from __future__ import annotations

import json

import pytest

from pushgrid.client.cli import message_json, parse_fields, publish_command, subscribe_command
from pushgrid.client.models import Message, MessageType


def test_parse_fields() -> None:
    assert parse_fields(None) == {}
    assert parse_fields(["volume=6.62M", "note=a=b", "empty="]) == {
        "volume": "6.62M",
        "note": "a=b",
        "empty": "",
    }


@pytest.mark.parametrize("bad", ["novalue", "=value", ""])
def test_parse_fields_rejects_bad_syntax(bad: str) -> None:
    with pytest.raises(ValueError, match="expected NAME=VALUE") as info:
        parse_fields(["ok=1", bad])
    assert repr(bad) in str(info.value)


def test_message_json_has_exactly_the_documented_keys() -> None:
    message = Message(
        subject="/a/b",
        content="é 193",
        fields={"k": "v"},
        type=MessageType.RECOVERED,
        epoch="e1",
        seq=4,
        qos="guaranteed",
        retained=True,
        ts=1,
    )
    line = message_json(message)
    assert "\n" not in line
    decoded = json.loads(line)
    assert list(decoded) == ["subject", "content", "fields", "type", "epoch", "seq"]
    assert decoded == {
        "subject": "/a/b",
        "content": "é 193",
        "fields": {"k": "v"},
        "type": "recovered",
        "epoch": "e1",
        "seq": 4,
    }


def test_publish_command_bad_field_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert publish_command("/a/b", "x", ["oops"], "127.0.0.1:1") == 1
    err = capsys.readouterr().err
    assert "--field 'oops'" in err
    assert "NAME=VALUE" in err


def test_publish_command_bad_server_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert publish_command("/a/b", "x", None, "host:port") == 1
    assert "'host:port'" in capsys.readouterr().err


def test_publish_command_bad_subject_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert publish_command("nope", "x", None, "127.0.0.1:1") == 1
    assert "invalid subject 'nope'" in capsys.readouterr().err


def test_subscribe_command_bad_subject_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert subscribe_command(["/ok/x", "/bad"], "127.0.0.1:1", count=1) == 1
    assert "invalid subject '/bad'" in capsys.readouterr().err
