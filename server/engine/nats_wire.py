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
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from pushgrid.protocol.frames import QoS
from pushgrid.protocol.sizes import message_size

from .base import Published, PublishRequest, Snapshot, SnapshotBounds, SnapshotLimitExceeded

GUARANTEED_PREFIX = "pg.g."
REPUBLISH_PREFIX = "pg.r."
STANDARD_PREFIX = "pg.s."


def subject_token(subject: str) -> str:
    return base64.urlsafe_b64encode(subject.encode("utf-8", "surrogatepass")).decode().rstrip("=")


def token_subject(token: str) -> str:
    padded = token + "=" * (-len(token) % 4)
    return base64.urlsafe_b64decode(padded).decode("utf-8", "surrogatepass")


class Item(msgspec.Struct, frozen=True, omit_defaults=True):
    """One message of a record (short names: stored per message)."""

    c: str  # content
    s: int  # seq
    t: int  # ts, ms since the Unix epoch
    f: dict[str, str] = {}  # fields
    r: bool = True  # retained
    q: QoS = "guaranteed"
    m: str | None = None  # the publisher's msg_id (guarantee 7); absent when it gave none
    g: int = 0  # ingress: us since the Unix epoch at the ingress member (ADR 048); 0: absent

    def published(self, subject: str, epoch: str) -> Published:
        return Published(
            subject=subject,
            content=self.c,
            fields=self.f,
            retained=self.r,
            qos=self.q,
            epoch=epoch,
            seq=self.s,
            ts=self.t,
            ingress=self.g,
        )


class Record(msgspec.Struct, frozen=True, omit_defaults=True):
    """One stored record: messages of one subject that a member published together (a hot
    subject's queue, in order), their epoch, and the subject's snapshot after the last one."""

    e: str  # epoch
    i: list[Item]  # the messages, seq order
    sc: str | None = None  # snapshot content (None: no retained message yet)
    sf: dict[str, str] = {}  # snapshot fields
    st: int = 0  # snapshot ts
    sq: QoS = "guaranteed"  # snapshot qos (of the last retained message)

    @property
    def s(self) -> int:
        """The subject's seq after this record."""
        return self.i[-1].s

    def messages(self, subject: str) -> list[Published]:
        return [item.published(subject, self.e) for item in self.i]

    def snapshot(self, subject: str) -> Snapshot | None:
        if self.sc is None:
            return None
        return Snapshot(subject, self.sc, dict(self.sf), self.e, self.s, self.st, self.sq)


def item_bytes(item: Item) -> int:
    """The message's size as MaxMessageSize counts it: UTF-8 of content, field names, values."""
    return message_size(item.c, item.f)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Record)


def encode_record(record: Record) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes) -> Record:
    return _decoder.decode(data)


@dataclass(frozen=True, slots=True)
class Merged:
    """:func:`next_record`'s answer: the record (None when every request was refused) and, per
    request in order, the bound it broke (None: it is in the record)."""

    record: Record | None
    refused: list[SnapshotLimitExceeded | None]


def next_record(
    previous: Record | None,
    requests: Sequence[PublishRequest],
    epoch: str,
    ts: int,
    bounds: SnapshotBounds | None = None,
    subject: str = "",
) -> Merged:
    """The record following ``previous`` holding ``requests`` in order; ``epoch`` is used when
    there is no previous record (a subject's first record starts its numbering). A retained
    request that would leave the snapshot above ``bounds`` is left out (guarantee 11): the
    check is against the snapshot this very record carries, so it holds however many members
    publish at once (the record is stored only on top of ``previous``)."""
    seq = previous.s if previous is not None else 0
    epoch = previous.e if previous is not None else epoch
    snap_content = previous.sc if previous is not None else None
    snap_fields = dict(previous.sf) if previous is not None else {}
    snap_ts = previous.st if previous is not None else 0
    snap_qos: QoS = previous.sq if previous is not None else "guaranteed"
    items: list[Item] = []
    refused: list[SnapshotLimitExceeded | None] = []
    checked = bounds is not None and any(r.retained for r in requests)
    fields_bytes = message_size("", snap_fields) if checked else 0
    for request in requests:
        if request.retained and bounds is not None:
            try:
                fields_bytes = bounds.check(
                    subject, request.content, snap_fields, request.fields, fields_bytes
                )
            except SnapshotLimitExceeded as exc:
                refused.append(exc)
                continue
        refused.append(None)
        if request.qos == "guaranteed":
            seq += 1
        items.append(
            Item(
                request.content,
                seq,
                ts,
                request.fields,
                request.retained,
                request.qos,
                request.msg_id,
                request.ingress,
            )
        )
        if request.retained:
            snap_content = request.content
            snap_fields.update(request.fields)
            snap_ts = ts
            snap_qos = request.qos
    if not items:
        return Merged(None, refused)
    record = Record(e=epoch, i=items, sc=snap_content, sf=snap_fields, st=snap_ts, sq=snap_qos)
    return Merged(record, refused)
