"""Each subsystem's part of the settings holds exactly its keys, and the keys are unchanged."""

from __future__ import annotations

import re
from pathlib import Path

from pushgrid.config import (
    PARTS,
    AdminSettings,
    JmxSettings,
    ServerSettings,
    Settings,
    load_settings,
)

ROOT = Path(__file__).resolve().parents[2]
SECTION = re.compile(r"^### .*\(`settings\.(\w+)`", re.MULTILINE)
ROW = re.compile(r"^\| `([^`]+)` \|", re.MULTILINE)


def _documented() -> dict[str, list[str]]:
    """Part -> the keys docs/configuration.md lists under that part's heading."""
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    text = text.split("## Keys", 1)[1].split("\n## ", 1)[0]
    headings = list(SECTION.finditer(text))
    sections: dict[str, list[str]] = {}
    for here, after in zip(headings, [*headings[1:], None], strict=True):
        body = text[here.end() : after.start() if after else len(text)]
        sections[here.group(1)] = ROW.findall(body)
    return sections


def _keys(part: type[object]) -> set[str]:
    fields = part.model_fields  # type: ignore[attr-defined]
    return {info.alias or name for name, info in fields.items()}


def test_the_parts_cover_every_key_once() -> None:
    every = [key for part in PARTS.values() for key in _keys(part)]
    assert len(every) == len(set(every)), "a key is in two parts"
    assert set(every) == _keys(Settings)


def test_each_part_holds_exactly_the_keys_documented_under_it() -> None:
    documented = _documented()
    assert set(documented) == set(PARTS)
    for name, part in PARTS.items():
        assert sorted(documented[name]) == sorted(_keys(part)), name


def test_key_names_and_aliases_are_unchanged() -> None:
    """A key renamed, added or dropped must be a decision: the list is docs/configuration.md's."""
    documented = {key for keys in _documented().values() for key in keys}
    assert documented == _keys(Settings)
    for name, info in Settings.model_fields.items():
        assert info.alias is not None, name


def test_a_part_is_the_values_of_the_whole() -> None:
    settings = load_settings(
        environ={"PUSHGRID_JMXLISTEN": "127.0.0.1:9911", "PUSHGRID_ADMIN_STALEAFTER": "60"}
    )
    assert isinstance(settings.jmx, JmxSettings)
    assert settings.jmx.jmx_listen == "127.0.0.1:9911"
    assert isinstance(settings.admin, AdminSettings)
    assert settings.admin.admin_stale_after == 60
    assert isinstance(settings.server, ServerSettings)
    assert settings.server.listen_addresses == settings.listen_addresses
    assert settings.cluster.engine_name == "memory"
    for name, part in PARTS.items():
        view = getattr(settings, name)
        assert type(view) is part
        assert view.model_dump() == {f: getattr(settings, f) for f in part.model_fields}


def test_no_two_parts_share_a_validator_name() -> None:
    """Settings inherits every part: a validator named like another part's replaces it in the
    MRO, and that part's keys go unchecked (Occupancy's `_webhook` once hid Alerts')."""
    seen: dict[str, str] = {}
    for name, part in PARTS.items():
        decorators = part.__pydantic_decorators__
        for validator in [*decorators.field_validators, *decorators.model_validators]:
            assert validator not in seen, f"{name} and {seen[validator]} both define {validator}"
            seen[validator] = name


def test_the_default_member_is_named_as_the_server_calls_itself() -> None:
    """Issue 34, 4.2: under ``make up`` the server called itself by the host name (meta-subjects,
    pipeline scope ``node:<host>``) while the admin API, console and RRD called it ``local``.
    ``Admin.Members`` left at its default takes ``ServerName`` and the first monitoring address."""
    from pushgrid.config import load_settings

    named = load_settings(None, environ={}, server_name="vm")
    assert named.admin.admin_members == ["vm=http://127.0.0.1:8900"]
    moved = load_settings(
        None, environ={"PUSHGRID_MONITORHTTP_LISTEN": "*:25100"}, server_name="edge-1"
    )
    assert moved.admin_members == ["edge-1=http://127.0.0.1:25100"]
    given = load_settings(None, environ={"PUSHGRID_ADMIN_MEMBERS": "a=http://10.0.0.1:8900"})
    assert given.admin_members == ["a=http://10.0.0.1:8900"], "a given list is kept as is"
