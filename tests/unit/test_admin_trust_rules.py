"""The pure rules of issue 22 in the admin API: which discovered members get credentials, how
failed sign-ins are keyed, which session frames an entitlement token may see, and the secret
box of member passwords."""

from __future__ import annotations

from pathlib import Path

import pytest

from pushgrid.admin_api.member_client import MemberEndpoint
from pushgrid.admin_api.secretbox import SecretBox, _derived_key, _file_key, is_sealed
from pushgrid.admin_api.security import throttle_key
from pushgrid.admin_api.services.cluster import discovered_members, discovery_allowed
from pushgrid.admin_api.services.entitlement import frame_subjects, redact_frames
from pushgrid.console.pages.trace import render_session
from pushgrid.ops.cluster import ClusterDocument, ClusterMember


@pytest.mark.parametrize(
    ("url", "allow", "expected"),
    [
        ("http://10.0.0.2:8900", [], False),
        ("http://10.0.0.2:8900", ["10.0.0.2"], True),
        ("http://10.0.0.2:8900", ["10.0.0.2:8900"], True),
        ("http://10.0.0.2:8901", ["10.0.0.2:8900"], False),
        ("http://10.0.0.2:8900", ["10.0.0.0/24"], True),
        ("http://10.0.1.2:8900", ["10.0.0.0/24"], False),
        ("http://push-2.example:8900", ["PUSH-2.example"], True),
        ("http://push-2.example.evil:8900", ["push-2.example"], False),
        ("http://[fd00::2]:8900", ["[fd00::2]:8900"], True),
        ("http://[fd00::2]:8900", ["fd00::/8"], True),
        ("https://10.0.0.2", ["10.0.0.2:443"], True),
        ("service:jmx:rmi:///jndi/rmi://10.0.0.2:9010/jmxrmi", ["10.0.0.2"], False),
        ("http://user:pw@10.0.0.2:8900", ["10.0.0.3"], False),
    ],
)
def test_discovery_allow_list(url: str, allow: list[str], expected: bool) -> None:
    assert discovery_allowed(url, allow) is expected


def test_discovered_members_get_credentials_only_when_allowed() -> None:
    via = MemberEndpoint("m1", "http://10.0.0.1:8900", "config", username="ops", password="pw")
    heard = [("m2", "http://10.0.0.2:8900"), ("evil", "http://203.0.113.9:8900")]
    view = ClusterDocument(
        engine="nats",
        mode="standard",
        health="ok",
        health_reasons=[],
        quorum=True,
        quorum_size=1,
        seeds=1,
        members_up=2,
        members=[
            ClusterMember(
                name=name,
                index=index,
                address="",
                seed=False,
                state="up",
                is_self=False,
                client_urls=[],
                monitor_urls=[url],
                last_seen_seconds=None,
            )
            for index, (name, url) in enumerate(heard, 2)
        ],
        nats_connected=True,
        meta_leader=None,
        stream_leader=None,
        replicas=[],
        stream_messages=0,
        config_mismatch=[],
    )
    found = {m.name: m for m in discovered_members([via], [view], ["10.0.0.0/24"])}
    assert found["m2"].password == "pw"
    assert found["evil"].password is None
    assert found["evil"].username is None


def test_failed_sign_ins_are_keyed_by_address_and_token_prefix() -> None:
    assert throttle_key("127.0.0.1", "pgt_abcdefgh" + "x" * 35) == "127.0.0.1 pgt_abcdefgh"
    assert throttle_key("127.0.0.1", "pgt_abcdefgh1") != throttle_key("127.0.0.1", "pgt_zzzzzzzz1")


def test_frames_are_redacted_unless_every_subject_is_granted() -> None:
    assert frame_subjects('{"type":"message","subject":"/a"}') == {"/a"}
    assert frame_subjects('[{"subject":"/a"},{"subject":"/b"}]') == {"/a", "/b"}
    assert frame_subjects('{"type":"pong"}') == set()
    assert frame_subjects('{"type":"subscribed","subjects":["/a"]}') == {"/a"}
    assert frame_subjects('{"subject":"/a", "content":"cut at 2 Ki') is None
    frames = [
        {"at": 1, "size": 3, "text": '{"subject":"/a"}'},
        {"at": 2, "size": 3, "text": '{"subject":"/secret"}'},
        {"at": 3, "size": 3, "text": '{"type":"pong"}'},
        {"at": 4, "size": 3, "text": "not json"},
    ]
    shown = redact_frames(frames, {"/a"})
    assert [f["text"] is None for f in shown] == [False, True, False, True]
    assert shown[1]["redacted"] == "entitlement"
    assert "redacted" not in shown[0]


def test_the_console_shows_a_redacted_frame() -> None:
    detail = {
        "id": "s1",
        "remote": "127.0.0.1:1",
        "outbound_buffer_bytes": 0,
        "bytes_out": 0,
        "subjects": ["/secret"],
        "last_frames": [{"at": 1, "size": 9, "text": None, "redacted": "entitlement"}],
    }
    assert "hidden: entitlement" in str(render_session(detail))


def test_the_secret_box(tmp_path: Path) -> None:
    box = SecretBox(_derived_key("a long admin secret"))
    sealed = box.seal("pw")
    assert sealed is not None
    assert is_sealed(sealed)
    assert "pw" not in sealed.removeprefix("fernet:")
    assert box.open(sealed) == "pw"
    assert box.open("legacy-clear") == "legacy-clear"
    assert box.seal(None) is None
    other = SecretBox(_derived_key("another secret"))
    with pytest.raises(Exception, match="cannot be decrypted"):
        other.open(sealed)
    key_file = tmp_path / "k" / "admin-secret.key"
    key = _file_key(key_file)
    assert _file_key(key_file) == key  # made once, then read
    assert key_file.stat().st_mode & 0o777 == 0o600
