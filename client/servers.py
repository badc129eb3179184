"""Weighted server lists: parsing ``"[weight ]host[:port]"`` entries and choosing among them.

An entry is an optional integer weight (0-100, default 100) followed by whitespace and an address.
The address is ``host``, ``host:port``, ``[ipv6]``, ``[ipv6]:port`` (default port 8800), or a
``ws://`` / ``wss://`` URL (default port 80 / 443 as for any URL, default path ``/ws``).

Choice guarantees (:class:`ServerPool`):

- only servers that have not failed are candidates, until every server has failed; then the
  failure marks are forgotten and every server is a candidate again;
- among the candidates, a server with weight ``w > 0`` is chosen with probability
  ``w / sum(weights)``; servers of weight 0 are backups, chosen (uniformly) only when no
  candidate has a positive weight.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

DEFAULT_PORT = 8800
DEFAULT_WEIGHT = 100
MAX_WEIGHT = 100
DEFAULT_PATH = "/ws"

_WEIGHT_PREFIX = re.compile(r"^(\S+)\s+(\S.*)$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$")


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """One parsed server entry. ``str()`` gives ``host:port`` (IPv6 hosts in brackets)."""

    host: str
    port: int
    weight: int = DEFAULT_WEIGHT
    secure: bool = False
    path: str = DEFAULT_PATH
    query: str = field(default="", compare=False)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, token: str | None = None) -> str:
        """The WebSocket URL to open, with ``token`` appended as the ``token`` query parameter."""
        scheme = "wss" if self.secure else "ws"
        params = [self.query] if self.query else []
        if token:
            params.append("token=" + quote(token, safe=""))
        query = ("?" + "&".join(params)) if params else ""
        return f"{scheme}://{self}{self.path}{query}"


def parse_server(entry: str) -> ServerAddress:
    """Parse one ``"[weight ]host[:port]"`` or ``"[weight ]ws(s)://host[:port][/path]"`` entry.

    Raises ValueError naming ``entry`` and what is wrong with it.
    """
    text = entry.strip()
    if not text:
        raise ValueError(f"server entry {entry!r} is empty")
    weight = DEFAULT_WEIGHT
    match = _WEIGHT_PREFIX.match(text)
    if match is not None:
        weight_text, text = match.group(1), match.group(2).strip()
        if not weight_text.isdigit():
            raise ValueError(
                f"server entry {entry!r}: weight {weight_text!r} is not an integer from 0 to "
                f"{MAX_WEIGHT} (expected '[weight ]host[:port]')"
            )
        weight = int(weight_text)
        if weight > MAX_WEIGHT:
            raise ValueError(
                f"server entry {entry!r}: weight {weight} is out of range 0-{MAX_WEIGHT}"
            )
    if "://" in text:
        return _parse_url(entry, text, weight)
    host, port = _parse_host_port(entry, text, DEFAULT_PORT)
    return ServerAddress(host=host, port=port, weight=weight)


def parse_servers(servers: str | Iterable[str]) -> list[ServerAddress]:
    """Parse a server list: a sequence of entries, or one string of comma-separated entries.

    Raises ValueError when the list is empty or an entry is invalid (the message names it).
    """
    entries = servers.split(",") if isinstance(servers, str) else list(servers)
    if isinstance(servers, str) and not servers.strip():
        entries = []
    if not entries:
        raise ValueError("the server list is empty; expected entries like '[weight ]host[:port]'")
    return [parse_server(entry) for entry in entries]


def _parse_url(entry: str, text: str, weight: int) -> ServerAddress:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"server entry {entry!r}: invalid URL ({exc})") from None
    if parts.scheme not in ("ws", "wss"):
        raise ValueError(
            f"server entry {entry!r}: scheme {parts.scheme!r} is not supported (use ws:// or "
            "wss://, or a plain host[:port])"
        )
    if not parts.hostname:
        raise ValueError(f"server entry {entry!r}: the URL has no host")
    if parts.username is not None or parts.fragment:
        raise ValueError(f"server entry {entry!r}: user info and fragments are not supported")
    secure = parts.scheme == "wss"
    if port is None:
        port = 443 if secure else 80
    _check_port(entry, port)
    return ServerAddress(
        host=parts.hostname,
        port=port,
        weight=weight,
        secure=secure,
        path=parts.path or DEFAULT_PATH,
        query=parts.query,
    )


def _parse_host_port(entry: str, text: str, default_port: int) -> tuple[str, int]:
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"server entry {entry!r}: missing ']' after an IPv6 address")
        host, rest = text[1:end], text[end + 1 :]
        if not host or ":" not in host:
            raise ValueError(f"server entry {entry!r}: {host!r} is not an IPv6 address")
        if rest and not rest.startswith(":"):
            raise ValueError(f"server entry {entry!r}: unexpected {rest!r} after ']'")
        port_text = rest[1:] if rest else None
    else:
        if text.count(":") > 1:
            raise ValueError(
                f"server entry {entry!r}: write IPv6 addresses in brackets, e.g. '[::1]:8800'"
            )
        host, _, port_part = text.partition(":")
        port_text = port_part if ":" in text else None
        if not _HOSTNAME.match(host):
            raise ValueError(f"server entry {entry!r}: {host!r} is not a valid host name")
    if port_text is None:
        return host, default_port
    if not port_text.isdigit():
        raise ValueError(f"server entry {entry!r}: port {port_text!r} is not a number")
    port = int(port_text)
    _check_port(entry, port)
    return host, port


def _check_port(entry: str, port: int) -> None:
    if not 1 <= port <= 65535:
        raise ValueError(f"server entry {entry!r}: port {port} is out of range 1-65535")


class ServerPool:
    """Weighted random choice over a server list that skips failed servers.

    Not thread-safe; meant for one client's reconnect loop. ``rng`` makes choices reproducible.
    """

    def __init__(self, servers: Sequence[ServerAddress], rng: random.Random | None = None) -> None:
        if not servers:
            raise ValueError("a server pool needs at least one server")
        self._servers: tuple[ServerAddress, ...] = tuple(servers)
        self._failed: set[int] = set()
        self._rng = rng if rng is not None else random.Random()

    @property
    def servers(self) -> tuple[ServerAddress, ...]:
        """All servers, in list order."""
        return self._servers

    def candidates(self) -> list[ServerAddress]:
        """Servers :meth:`choose` may return now (forgetting failures if all have failed)."""
        if len(self._failed) >= len(self._servers):
            self._failed.clear()
        live = [s for i, s in enumerate(self._servers) if i not in self._failed]
        weighted = [s for s in live if s.weight > 0]
        return weighted or live

    def choose(self) -> ServerAddress:
        """Pick a server by weight among the candidates (see the module docstring)."""
        candidates = self.candidates()
        weights = [s.weight for s in candidates]
        if sum(weights) <= 0:
            return self._rng.choice(candidates)
        return self._rng.choices(candidates, weights=weights, k=1)[0]

    def mark_failed(self, server: ServerAddress) -> None:
        """Exclude ``server`` from choices until every server has failed (or :meth:`reset`)."""
        for index, candidate in enumerate(self._servers):
            if candidate is server or candidate == server:
                self._failed.add(index)

    def reset(self) -> None:
        """Forget all failures (called after a successful connection)."""
        self._failed.clear()
