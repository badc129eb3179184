"""How pushgrid messages travel on NATS: subject names and the stored record. Pure code.

A pushgrid subject (``/Stocks/NYSE/IBM``: any UTF-8 except the separators NATS reserves) becomes
one NATS token in URL-safe base64, so every subject maps to exactly one NATS subject and no
pushgrid character can act as a NATS wildcard or separator.

In Guaranteed mode every message of a subject is a record in the JetStream stream. A record
carries the message, its (epoch, seq), and the subject's snapshot *after* it (the merge of every
retained message so far). The snapshot therefore survives the cache limit: the last record of a
subject is all a member needs to serve its snapshot and position.
"""

from __future__ import annotations

import base64

import msgspec

from ..protocol.frames import QoS
from .base import Published, Snapshot

GUARANTEED_PREFIX = "pg.g."
REPUBLISH_PREFIX = "pg.r."
STANDARD_PREFIX = "pg.s."
MEMBERS_SUBJECT = "pg.members"
HELLO_SUBJECT = "pg.hello"


def subject_token(subject: str) -> str:
    return base64.urlsafe_b64encode(subject.encode("utf-8", "surrogatepass")).decode().rstrip("=")


def token_subject(token: str) -> str:
    padded = token + "=" * (-len(token) % 4)
    return base64.urlsafe_b64decode(padded).decode("utf-8", "surrogatepass")


class Record(msgspec.Struct, frozen=True, omit_defaults=True):
    """One stored message plus the subject's state after it (short names: stored per message)."""

    c: str  # content
    e: str  # epoch
    s: int  # seq
    t: int  # ts, ms since the Unix epoch
    f: dict[str, str] = {}  # fields
    r: bool = True  # retained
    q: QoS = "guaranteed"
    sc: str | None = None  # snapshot content (None: no retained message yet)
    sf: dict[str, str] = {}  # snapshot fields
    st: int = 0  # snapshot ts

    def published(self, subject: str) -> Published:
        return Published(
            subject=subject,
            content=self.c,
            fields=self.f,
            retained=self.r,
            qos=self.q,
            epoch=self.e,
            seq=self.s,
            ts=self.t,
        )

    def snapshot(self, subject: str) -> Snapshot | None:
        if self.sc is None:
            return None
        return Snapshot(subject, self.sc, dict(self.sf), self.e, self.s, self.st)


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def record_bytes(record: Record) -> int:
    """The message's size as MaxMessageSize counts it: UTF-8 of content, field names, values."""
    return _utf8(record.c) + sum(_utf8(k) + _utf8(v) for k, v in record.f.items())


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Record)


def encode_record(record: Record) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes) -> Record:
    return _decoder.decode(data)


def next_record(
    previous: Record | None,
    content: str,
    fields: dict[str, str],
    retained: bool,
    qos: QoS,
    epoch: str,
    ts: int,
) -> Record:
    """The record following ``previous``; ``epoch`` is used when there is none (a subject's
    first record starts its numbering)."""
    seq = previous.s if previous is not None else 0
    epoch = previous.e if previous is not None else epoch
    if qos == "guaranteed":
        seq += 1
    snap_content = previous.sc if previous is not None else None
    snap_fields = dict(previous.sf) if previous is not None else {}
    snap_ts = previous.st if previous is not None else 0
    if retained:
        snap_content = content
        snap_fields.update(fields)
        snap_ts = ts
    return Record(
        c=content,
        e=epoch,
        s=seq,
        t=ts,
        f=fields,
        r=retained,
        q=qos,
        sc=snap_content,
        sf=snap_fields,
        st=snap_ts,
    )


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
