"""A fast path for the request every WebSocket client sends first: one whole head, no body.

Under a connection storm h11 spent ~30% of the server's Python time on the connect path (its
receive buffer, event objects, state machine and header normalisation) for a request of a few
hundred bytes that arrives whole in the first read. :func:`parse_upgrade_head` reads such a
head with **h11's grammar** (the ``request_line`` and ``header_field`` rules of RFC 9110/9112 as
h11 writes them, matched whole as h11 does; ``tests/unit/test_transport_request_head.py``
checks that they equal h11's private ones, so an h11 upgrade that changes them fails a test
instead of drifting) and returns it only when it is the plain case: an
``HTTP/1.1 GET`` with one ``Host``, no ``Content-Length`` or ``Transfer-Encoding``, no
obsolete line folding, only CRLF line ends, within the head limits. Anything else returns
``None`` and the caller gives the same bytes to h11, which accepts or refuses them exactly as
before (ADR 019): the fast path never accepts a head h11 would refuse, and never refuses one.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# RFC 9110 5.6.2 token, 5.5 field-value (h11 also accepts obs-text), RFC 9112 3 request-line.
_TCHARS = r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_FIELD_CONTENT = r"[^\x00\s]+(?:[ \t]+[^\x00\s]+)*"
HEADER_FIELD_RULE = rf"(?P<field_name>{_TCHARS}):[ \t]*(?P<field_value>({_FIELD_CONTENT})?)[ \t]*"
REQUEST_LINE_RULE = (
    rf"(?P<method>{_TCHARS}) (?P<target>[\x21-\x7e]+) HTTP/(?P<http_version>[0-9]\.[0-9])"
)

_REQUEST_LINE = re.compile(REQUEST_LINE_RULE.encode("ascii"))
_HEADER_FIELD = re.compile(HEADER_FIELD_RULE.encode("ascii"))
_END = b"\r\n\r\n"
# Headers whose presence sends the request to h11: framing a body (h11 validates the values
# and refuses conflicts), or a second Host (h11 refuses it).
_TO_H11 = frozenset((b"content-length", b"transfer-encoding"))


class UpgradeHead(NamedTuple):
    target: bytes
    headers: list[tuple[bytes, bytes]]  # names lower-cased, values stripped, as h11 gives
    trailing: bytes  # what followed the head (the client's first frames, if any)


def parse_upgrade_head(data: bytes, max_headers: int, max_size: int) -> UpgradeHead | None:
    """The head at the start of ``data`` when it is a whole, plain ``GET`` (else ``None``)."""
    end = data.find(_END)
    if end < 0 or end + 4 > max_size or not data.startswith(b"GET "):
        return None
    head = data[:end]
    if b"\n" in head.replace(b"\r\n", b""):
        return None  # a bare LF (h11 accepts it as a line end): leave it to h11
    lines = head.split(b"\r\n")
    if len(lines) - 1 > max_headers:
        return None
    match = _REQUEST_LINE.fullmatch(lines[0])
    if match is None or match["http_version"] != b"1.1":
        return None
    headers: list[tuple[bytes, bytes]] = []
    hosts = 0
    size = len(match["target"])  # counted as HttpConnection counts it for the 431
    for line in lines[1:]:
        field = _HEADER_FIELD.fullmatch(line)  # also refuses a line folded onto the previous
        if field is None:
            return None
        name = field["field_name"].lower()
        if name in _TO_H11:
            return None
        value = field["field_value"]
        hosts += name == b"host"
        size += len(name) + len(value) + 4
        headers.append((name, value))
    if hosts != 1 or size > max_size:
        return None
    return UpgradeHead(match["target"], headers, data[end + 4 :])
