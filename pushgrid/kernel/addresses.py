"""``host:port`` text to an address: the one parser every listener key and command uses, and
which entry of a ``host:port`` list (``ClusterMembers``) names this member.

A leaf (stdlib only), so the settings and the cluster topology can both use it without importing
each other.
"""

from __future__ import annotations


def parse_address(value: str) -> tuple[str, int]:
    """``host:port`` (``*`` or empty host = every interface) -> (host, port)."""
    host, sep, port_text = value.strip().rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"{value!r} is not host:port")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} out of range 0-65535")
    host = host.strip("[]")
    return ("0.0.0.0" if host in ("", "*") else host), port


def resolve_self(entries: list[str], own: str) -> int:
    """The 1-based index of ``own`` (a position or a ``host:port`` entry) in ``entries``."""
    text = own.strip()
    if text.isdigit():
        index = int(text)
        if not 1 <= index <= len(entries):
            raise ValueError(f"position {index} is outside ClusterMembers (1-{len(entries)})")
        return index
    wanted = parse_address(text)
    for index, entry in enumerate(entries, start=1):
        if parse_address(entry) == wanted:
            return index
    raise ValueError(f"{text!r} is not one of ClusterMembers ({', '.join(entries)})")
