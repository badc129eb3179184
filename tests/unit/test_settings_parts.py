"""Each subsystem's part of the settings holds exactly its keys, and the keys are unchanged."""

from __future__ import annotations

import re
from pathlib import Path

from pushgrid.config import (
    PARTS,
    AdminSettings,
    JmxSettings,
    ListenerSettings,
    Settings,
    load_settings,
)
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.transport.context import Batching, Deflate, TransportLimits

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
    assert isinstance(settings.listeners, ListenerSettings)
    assert settings.listeners.listen_addresses == settings.listen_addresses
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


# Each part is what one object (or a few built together) is made from (ADR 043): the old
# push-server part held 60 keys, read by a dozen objects that each saw all of them.
LARGEST_PART = 30


def test_no_part_is_a_grab_bag() -> None:
    for name, part in PARTS.items():
        assert len(part.model_fields) <= LARGEST_PART, (name, len(part.model_fields))


def test_the_client_ports_objects_are_built_from_their_parts() -> None:
    """Keys set in the file reach the objects through the narrow parts, unchanged."""
    settings = load_settings(
        environ={
            "PUSHGRID_MAXSUBJECTS": "77",
            "PUSHGRID_CACHEEXPIRETIME": "9",
            "PUSHGRID_BATCHINGTIME": "250",
            "PUSHGRID_BATCHINGMAXSIZE": "4096",
            "PUSHGRID_DEFLATELEVEL": "3",
            "PUSHGRID_DEFLATEMAXCONTEXTS": "5",
            "PUSHGRID_MAXCONNECTIONS": "12",
            "PUSHGRID_MAXMESSAGESIZE": "262144",
            "PUSHGRID_SHUTDOWNTIMEOUT": "2",
        }
    )
    limits = EngineLimits.from_settings(settings.engine_limits)
    assert (limits.max_subjects, limits.expire_seconds) == (77, 9.0)
    assert Batching.from_settings(settings.batching) == Batching(0.25, 4096)
    deflate = Deflate.from_settings(settings.deflate)
    assert deflate is not None
    assert (deflate.options.level, deflate.max_contexts) == (3, 5)
    transport = TransportLimits.from_settings(
        settings.transport, settings.session.max_frame_size, publish_timeout=3.0
    )
    assert transport.max_connections == 12
    assert transport.max_frame_size == transport.max_http_body == 8 * 262144
    assert transport.finish_timeout == 5.0
    assert settings.session.max_message_size == 262144
    assert settings.server.model_dump() == {
        "server_name": settings.server_name,
        "allocator": "jemalloc",
        "log_level": "INFO",
        "workers": "auto",  # ADR 067
    }
