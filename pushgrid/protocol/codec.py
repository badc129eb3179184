"""Decode client frames and encode server frames. Pure functions over bytes and structs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from .errors import ErrorCode, RemoteProtocolError
from .frames import (
    CLIENT_OPS,
    MAX_REPORT_SUBJECTS,
    MAX_SAFE_INTEGER,
    ClientOp,
    DeliveryReport,
    PresenceQuery,
    Publish,
    ServerFrame,
    Subscribe,
    Unsubscribe,
    client_id_error,
    msg_id_error,
)
from .latency import BUCKET_COUNT, MAX_COUNT
from .subjects import validate_subject

_encoder = msgspec.json.Encoder()
_raw_decoder = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-connection limits the codec enforces while decoding."""

    max_message_size: int = 64 * 1024
    max_subjects_per_request: int = 1000
    max_history: int = 1000


def encode(frame: ServerFrame) -> bytes:
    """Serialize one server frame to UTF-8 JSON bytes."""
    return _encoder.encode(frame)


def decode_client_frame(data: bytes | str, limits: Limits) -> ClientOp:
    """Parse and validate one client text frame, or raise :class:`RemoteProtocolError`.

    The error carries the request ``id`` whenever the frame had a readable one, so the client
    can match the error to its request.
    """
    raw = _decode_json_object(data)
    raw_id = raw.get("id")
    # bool is an int subclass: excluded; ids past 2^53 would be echoed wrong to JavaScript.
    request_id = raw_id if type(raw_id) is int and abs(raw_id) <= MAX_SAFE_INTEGER else None
    op = raw.get("op")
    if op not in CLIENT_OPS:
        known = ", ".join(CLIENT_OPS)
        raise RemoteProtocolError(
            ErrorCode.UNKNOWN_OP, f"unknown op {op!r}; expected one of {known}", request_id
        )
    try:
        frame: ClientOp = msgspec.convert(raw, type=ClientOp)
        _check(frame, limits, request_id)
    except msgspec.ValidationError as exc:
        code = ErrorCode.INVALID_REPORT if op == "report" else ErrorCode.INVALID_FRAME
        error = RemoteProtocolError(code, f"{op}: {exc}", request_id)
        error.op = op
        raise error from None
    except RemoteProtocolError as error:
        error.op = op
        raise
    except RecursionError:
        raise RemoteProtocolError(
            ErrorCode.INVALID_JSON, "JSON nested too deeply", request_id
        ) from None
    return frame


def decode_publish_body(data: bytes, limits: Limits) -> Publish:
    """Parse and check an HTTP ``POST /publish`` body (docs/http.md), or raise
    :class:`RemoteProtocolError`: the publish frame's keys, decoded into the same
    :class:`Publish` and checked by the same rules as the WebSocket frame. HTTP has no ``op``
    and no request ids: those keys are ignored, and ``"msg_id": null`` means none, as the
    endpoint always took them. Every decoding failure is ``invalid_frame`` ("body: ...")."""
    try:
        raw = _raw_decoder.decode(data)
        if isinstance(raw, dict):
            raw.pop("op", None)
            raw.pop("id", None)
            if raw.get("msg_id", 0) is None:
                del raw["msg_id"]
        frame = msgspec.convert(raw, type=Publish)
    except msgspec.DecodeError as exc:  # ValidationError too
        raise RemoteProtocolError(ErrorCode.INVALID_FRAME, f"body: {exc}") from None
    except RecursionError:  # an unknown key nested 1,000 deep (issue 34): never a traceback
        raise RemoteProtocolError(ErrorCode.INVALID_FRAME, "body: JSON nested too deeply") from None
    except UnicodeError as exc:  # a string that is not UTF-8: refused, never a traceback
        raise RemoteProtocolError(
            ErrorCode.INVALID_FRAME, f"body: not valid UTF-8: {exc}"
        ) from None
    _check_publish(frame, limits, None, "")
    return frame


def _decode_json_object(data: bytes | str) -> dict[str, Any]:
    try:
        raw = _raw_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(ErrorCode.INVALID_JSON, f"not valid JSON: {exc}") from None
    except RecursionError:  # deeply nested arrays/objects: refuse, never a traceback
        raise RemoteProtocolError(ErrorCode.INVALID_JSON, "JSON nested too deeply") from None
    except UnicodeError as exc:
        raise RemoteProtocolError(ErrorCode.INVALID_JSON, f"not valid UTF-8: {exc}") from None
    if not isinstance(raw, dict):
        raise RemoteProtocolError(ErrorCode.INVALID_FRAME, "a frame must be a JSON object")
    return raw


def _check(frame: ClientOp, limits: Limits, request_id: int | None) -> None:
    if isinstance(frame, Publish):
        _check_publish(frame, limits, request_id, "publish: ")
    elif isinstance(frame, Subscribe | Unsubscribe):
        _check_subjects(frame, limits, request_id)
    elif isinstance(frame, PresenceQuery):
        validate_subject(frame.subject, request_id)
    elif isinstance(frame, DeliveryReport):
        _check_report(frame, request_id)


def _check_report(frame: DeliveryReport, request_id: int | None) -> None:
    """A report's rules beyond its types (docs/protocol.md 5.7): at most MAX_REPORT_SUBJECTS
    named subjects and one unattributed entry, each subject once and valid, buckets in range,
    ascending, each count 1..MAX_COUNT. A broken report is refused whole (``invalid_report``)."""
    named = [entry.subject for entry in frame.entries if entry.subject is not None]
    unnamed = len(frame.entries) - len(named)
    problem: str | None = None
    if len(named) > MAX_REPORT_SUBJECTS or unnamed > 1:
        problem = f"at most {MAX_REPORT_SUBJECTS} subjects and one entry without a subject"
    elif len(set(named)) != len(named):
        problem = "a subject appears twice"
    for entry in frame.entries:
        if problem is not None:
            break
        problem = _bucket_problem(entry.latency)
    if problem is None:
        for subject in named:
            try:
                validate_subject(subject, request_id)
            except RemoteProtocolError as invalid:
                problem = invalid.message
                break
    if problem is not None:
        raise RemoteProtocolError(ErrorCode.INVALID_REPORT, f"report: {problem}", request_id)


def _bucket_problem(pairs: list[tuple[int, int]]) -> str | None:
    previous = -1
    for index, count in pairs:
        if not previous < index < BUCKET_COUNT:
            return f"bucket indexes must ascend within 0..{BUCKET_COUNT - 1}, got {index}"
        if not 1 <= count <= MAX_COUNT:
            return f"a bucket count must be 1..{MAX_COUNT}, got {count}"
        previous = index
    return None


def _check_publish(frame: Publish, limits: Limits, request_id: int | None, prefix: str) -> None:
    """The rules of a publish, whichever transport it came on (``prefix``: the frame's
    "publish: " before a msg_id error, nothing before HTTP's)."""
    validate_subject(frame.subject, request_id)
    invalid = msg_id_error(frame.msg_id) if isinstance(frame.msg_id, str) else None
    if invalid is not None:
        raise RemoteProtocolError(ErrorCode.INVALID_FRAME, f"{prefix}{invalid}", request_id)
    size = frame.size
    if size > limits.max_message_size:
        raise RemoteProtocolError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"message of {size} bytes exceeds MaxMessageSize {limits.max_message_size}",
            request_id,
            frame.subject,
        )


def _check_subjects(frame: Subscribe | Unsubscribe, limits: Limits, request_id: int | None) -> None:
    count = len(frame.subjects)
    if count == 0 or count > limits.max_subjects_per_request:
        raise RemoteProtocolError(
            ErrorCode.INVALID_FRAME,
            f"{frame.__struct_config__.tag}: 'subjects' must hold 1 to "
            f"{limits.max_subjects_per_request} entries, got {count}",
            request_id,
        )
    if isinstance(frame, Subscribe):
        for item in frame.subjects:
            if not 0 <= item.history <= limits.max_history:
                raise RemoteProtocolError(
                    ErrorCode.INVALID_FRAME,
                    f"subscribe: 'history' must be 0 to {limits.max_history}",
                    request_id,
                )
            if item.conflation < 0:
                raise RemoteProtocolError(
                    ErrorCode.INVALID_FRAME, "subscribe: 'conflation' must be >= 0", request_id
                )
            client = item.declared_client
            invalid = client_id_error(client) if client is not None else None
            if invalid is not None:
                raise RemoteProtocolError(
                    ErrorCode.INVALID_FRAME, f"subscribe: {invalid}", request_id, item.subject
                )


def publish_size(frame: Publish) -> int:
    """Size of a publish frame's message as MaxMessageSize counts it (``Publish.size``)."""
    return frame.size
