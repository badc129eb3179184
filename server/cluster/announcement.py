"""What members tell each other on NATS: the heartbeat (``pg.members``) and the hello.

Membership is the cluster's business, not the engine's: these wire values live here so that the
cluster package imports nothing of the engines (the engines build on the cluster, never the
reverse; tests/unit/test_import_rules.py).
"""

from __future__ import annotations

import msgspec

MEMBERS_SUBJECT = "pg.members"
HELLO_SUBJECT = "pg.hello"


class Announcement(msgspec.Struct, frozen=True):
    """A member's heartbeat on ``pg.members`` (also the answer to ``pg.hello``)."""

    name: str  # ServerName
    index: int  # position in ClusterMembers, 0 when the cluster is external
    fingerprint: str  # of ClusterMembers + seed count
    client_urls: list[str]
    monitor_urls: list[str]
    mode: str
    started: float
    meta_leader: str = ""  # a seed's view of the JetStream meta leader ("" unknown)


_announce_encoder = msgspec.json.Encoder()
_announce_decoder = msgspec.json.Decoder(Announcement)


def encode_announcement(value: Announcement) -> bytes:
    return _announce_encoder.encode(value)


def decode_announcement(data: bytes) -> Announcement:
    return _announce_decoder.decode(data)
