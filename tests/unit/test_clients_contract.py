"""The Clients documents (ADR 050): what the server builds fits what the admin API decodes."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from pushgrid.ops.attributes import ContractError
from pushgrid.ops.sessions import SessionDocument, SlowConsumerClose, decode_answer
from pushgrid.server.core.slow_consumers import ClosedSlowConsumer


def test_the_server_record_of_a_slow_consumer_is_the_contract_document() -> None:
    served = [f.name for f in dataclasses.fields(ClosedSlowConsumer)]
    assert served == list(SlowConsumerClose.__struct_fields__)
    record = ClosedSlowConsumer(
        1, "s", "127.0.0.1:1", "c", "sse", ["/a"], 1, 10, 20, True, {"/a": 3}, 1.5, 2e3, 4.0, 0.8, 2
    )
    decoded = decode_answer([dataclasses.asdict(record)], list[SlowConsumerClose], "x")
    assert decoded == [SlowConsumerClose(**dataclasses.asdict(record))]


def test_an_older_member_slow_consumer_record_decodes_with_defaults() -> None:
    """A record as a member before issue 33 item 5 answered it (ADR 054)."""
    older = {
        "at": 1,
        "session": "s",
        "remote": "127.0.0.1:1",
        "client_id": "",
        "transport": "websocket",
        "subjects": [],
        "subject_count": 0,
        "queued_bytes": 0,
        "limit": 1,
    }
    (record,) = decode_answer([older], list[SlowConsumerClose], "x")
    assert (record.compressed, record.queued_by_subject, record.rtt_ms, record.offenses) == (
        False,
        {},
        None,
        1,
    )


#: a ``list()`` entry as a member before issue 35 answered it
OLDER_ENTRY = {
    "id": "a",
    "remote": "r:1",
    "connected_since": 5,
    "subjects": [],
    "messages_in": 1,
    "bytes_in": 2,
    "bytes_out": 3,
}


def test_an_older_member_answer_decodes_with_defaults() -> None:
    (doc,) = decode_answer([OLDER_ENTRY], list[SessionDocument], "Sessions.list")
    assert (doc.client_id, doc.transport, doc.internal, doc.delivery_latency_ms) == (
        "",
        "websocket",
        False,
        None,
    )
    assert msgspec.to_builtins(doc)["internal"] is False


def test_a_wrong_transport_is_a_contract_error() -> None:
    bad = {**OLDER_ENTRY, "transport": "pigeon"}
    with pytest.raises(ContractError, match="transport"):
        decode_answer([bad], list[SessionDocument], "Sessions.list")
