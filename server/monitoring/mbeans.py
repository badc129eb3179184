"""A small in-process MBean registry with JMX ObjectName semantics.

An :class:`ObjectName` is ``domain:key=value,...``. Its canonical form sorts the key properties
by key, so ``pushgrid:type=Stats,name=x`` and ``pushgrid:name=x,type=Stats`` are the same name.
Patterns follow the JMX rules: ``*`` and ``?`` in the domain and in property values, and a
trailing ``*`` in the property list (``pushgrid:type=Stats,*``) that allows further properties.
``*:*`` matches everything. Values holding ``, = : "`` or wildcards must be quoted
(``ObjectName.quote``); :meth:`ObjectName.of` does that for you.

An :class:`MBean` is a described bag of read-only :class:`Attribute` getters and callable
:class:`Operation` s; the :class:`MBeanRegistry` is what the Jolokia agent serves.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

from pushgrid.ops.attributes import attributes
from pushgrid.protocol.exceptions import MonitoringError

__all__ = [
    "Arg",
    "Attribute",
    "InstanceAlreadyExists",
    "MBean",
    "MBeanRegistry",
    "MalformedObjectName",
    "ObjectName",
    "Operation",
    "document_attributes",
    "one_read",
]


class MalformedObjectName(MonitoringError, ValueError):
    """The text is not a valid JMX ObjectName or ObjectName pattern."""

    code = "malformed_name"


class InstanceAlreadyExists(MonitoringError, ValueError):
    """An MBean with that ObjectName is already registered."""

    code = "instance_exists"


_KEY_FORBIDDEN = frozenset(':=,*?"\n')
_UNQUOTED_VALUE_FORBIDDEN = frozenset(',=:"\n')
_QUOTE_ESCAPES = frozenset('\\"*?n')


def _has_wildcard(raw: str) -> bool:
    """True if ``raw`` (a domain or a raw property value) holds an unescaped ``*`` or ``?``."""
    quoted = raw.startswith('"')
    index = 0
    while index < len(raw):
        char = raw[index]
        if quoted and char == "\\":
            index += 2
            continue
        if char in "*?":
            return True
        index += 1
    return False


@functools.lru_cache(maxsize=512)
def _glob(raw: str) -> re.Pattern[str]:
    """Compile a JMX wildcard (``*`` any run, ``?`` one char) into a regex on raw text."""
    quoted = raw.startswith('"')
    parts: list[str] = []
    index = 0
    while index < len(raw):
        char = raw[index]
        if quoted and char == "\\" and index + 1 < len(raw):
            parts.append(re.escape(raw[index : index + 2]))
            index += 2
            continue
        parts.append(".*" if char == "*" else "." if char == "?" else re.escape(char))
        index += 1
    return re.compile("".join(parts), re.DOTALL)


def _wildcard_match(pattern: str, text: str) -> bool:
    if not _has_wildcard(pattern):
        return pattern == text
    return _glob(pattern).fullmatch(text) is not None


def _check_key(key: str) -> None:
    if not key or any(char in _KEY_FORBIDDEN for char in key):
        raise MalformedObjectName(f"invalid key {key!r}")


def _check_quoted(value: str) -> None:
    if len(value) < 2 or not value.endswith('"'):
        raise MalformedObjectName(f"unterminated quoted value {value!r}")
    body = value[1:-1]
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            if index + 1 >= len(body) or body[index + 1] not in _QUOTE_ESCAPES:
                raise MalformedObjectName(f"invalid escape in quoted value {value!r}")
            index += 2
            continue
        if char in '"\n':
            raise MalformedObjectName(f"invalid character in quoted value {value!r}")
        index += 1


def _check_value(value: str) -> None:
    if value.startswith('"'):
        _check_quoted(value)
    elif not value or any(char in _UNQUOTED_VALUE_FORBIDDEN for char in value):
        raise MalformedObjectName(f"invalid value {value!r}; quote it with ObjectName.quote()")


def _read_quoted(text: str, start: int) -> int:
    """Index just past the closing quote of the quoted value starting at ``start``."""
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return index + 1
        index += 1
    raise MalformedObjectName(f"unterminated quoted value in {text!r}")


def _split_properties(text: str) -> tuple[list[tuple[str, str]], bool]:
    """Parse ``k=v,k2="v,2",*`` into raw pairs and whether a ``*`` element was present."""
    pairs: list[tuple[str, str]] = []
    wildcard = False
    index = 0
    while True:
        if text.startswith("*", index) and (index + 1 == len(text) or text[index + 1] == ","):
            if wildcard:
                raise MalformedObjectName(f"more than one '*' in {text!r}")
            wildcard, index = True, index + 1
        else:
            equals = text.find("=", index)
            if equals < 0:
                raise MalformedObjectName(f"key property without '=' in {text!r}")
            end = _read_quoted(text, equals + 1) if text.startswith('"', equals + 1) else None
            if end is None:
                comma = text.find(",", equals + 1)
                end = len(text) if comma < 0 else comma
            pairs.append((text[index:equals], text[equals + 1 : end]))
            index = end
        if index == len(text):
            return pairs, wildcard
        if text[index] != "," or index + 1 == len(text):
            raise MalformedObjectName(f"unexpected text at {text[index:]!r}")
        index += 1


@dataclass(frozen=True, slots=True)
class ObjectName:
    """A JMX ObjectName or ObjectName pattern; ``str()`` is the canonical form.

    ``properties`` holds ``(key, raw value)`` pairs sorted by key; quoted values keep their
    quotes, as in JMX. ``property_list_pattern`` is the trailing ``,*``.
    """

    domain: str
    properties: tuple[tuple[str, str], ...] = ()
    property_list_pattern: bool = False
    _index: dict[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if ":" in self.domain or "\n" in self.domain:
            raise MalformedObjectName(f"invalid domain {self.domain!r}")
        pairs = tuple(sorted(self.properties))
        for key, value in pairs:
            _check_key(key)
            _check_value(value)
        index = dict(pairs)
        if len(index) != len(pairs):
            raise MalformedObjectName(f"duplicate key in {pairs!r}")
        if not pairs and not self.property_list_pattern:
            raise MalformedObjectName("key properties cannot be empty")
        object.__setattr__(self, "properties", pairs)
        object.__setattr__(self, "_index", index)

    @classmethod
    def parse(cls, text: str) -> ObjectName:
        """Parse ``domain:key=value,...`` (key order does not matter)."""
        domain, colon, rest = text.partition(":")
        if not colon:
            raise MalformedObjectName(f"{text!r} has no ':' between domain and key properties")
        if not rest:
            raise MalformedObjectName(f"{text!r}: key properties cannot be empty")
        pairs, wildcard = _split_properties(rest)
        return cls(domain, tuple(pairs), wildcard)

    @classmethod
    def of(
        cls, domain: str, properties: Mapping[str, str] | None = None, **more: str
    ) -> ObjectName:
        """Build a name from unquoted values, quoting those that need it."""
        merged = {**(properties or {}), **more}
        return cls(domain, tuple((key, cls.quote_if_needed(v)) for key, v in merged.items()))

    @staticmethod
    def quote(value: str) -> str:
        """JMX ``ObjectName.quote``: a quoted value that stands for ``value`` literally."""
        body = value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*")
        return '"' + body.replace("?", "\\?").replace("\n", "\\n") + '"'

    @staticmethod
    def unquote(value: str) -> str:
        """The literal text of a raw property value (quoted or not)."""
        if not value.startswith('"'):
            return value
        return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value[1:-1])

    @classmethod
    def quote_if_needed(cls, value: str) -> str:
        special = _UNQUOTED_VALUE_FORBIDDEN | {"*", "?"}
        if value and not any(char in special for char in value):
            return value
        return cls.quote(value)

    @property
    def key_property_list(self) -> str:
        """Canonical key property list, e.g. ``name=x,type=Stats`` (``,*`` kept for patterns)."""
        text = ",".join(f"{key}={value}" for key, value in self.properties)
        if self.property_list_pattern:
            return f"{text},*" if text else "*"
        return text

    @property
    def canonical(self) -> str:
        return f"{self.domain}:{self.key_property_list}"

    @property
    def keys(self) -> dict[str, str]:
        """Key -> raw value (a copy)."""
        return dict(self._index)

    def get(self, key: str) -> str | None:
        """The unquoted value of one key property, or ``None``."""
        raw = self._index.get(key)
        return None if raw is None else self.unquote(raw)

    @property
    def is_domain_pattern(self) -> bool:
        return _has_wildcard(self.domain)

    @property
    def is_property_value_pattern(self) -> bool:
        return any(_has_wildcard(value) for _, value in self.properties)

    @property
    def is_pattern(self) -> bool:
        return (
            self.property_list_pattern or self.is_domain_pattern or self.is_property_value_pattern
        )

    def matches(self, name: ObjectName) -> bool:
        """JMX ``ObjectName.apply``: does this (pattern) name match the concrete ``name``?"""
        if name.is_pattern or not _wildcard_match(self.domain, name.domain):
            return False
        if not self.property_list_pattern and len(self.properties) != len(name.properties):
            return False
        for key, value in self.properties:
            other = name._index.get(key)
            if other is None or not _wildcard_match(value, other):
                return False
        return True

    def __str__(self) -> str:
        return self.canonical


def as_object_name(name: ObjectName | str) -> ObjectName:
    return name if isinstance(name, ObjectName) else ObjectName.parse(name)


@dataclass(frozen=True, slots=True)
class Attribute:
    """A read-only attribute. ``type`` is a Java-like type name (``long``, ``java.lang.String``)."""

    name: str
    type: str
    description: str
    getter: Callable[[], Any]


#: the documents built during the current :func:`one_read`, by the builder that made them
_READ_TOGETHER: ContextVar[dict[int, dict[str, Any]] | None] = ContextVar(
    "read_together", default=None
)


@contextlib.contextmanager
def one_read() -> Iterator[None]:
    """Attributes read inside this block that come from one document come from one build of it.

    A Jolokia ``read`` of several attributes (or of a whole MBean) must not mix two moments:
    ``Workers`` counted before a process reported and ``Processes`` listing it after (a
    fresh-clone run saw ``Workers = 1`` next to two rows)."""
    token = _READ_TOGETHER.set({})
    try:
        yield
    finally:
        _READ_TOGETHER.reset(token)


def document_attributes(
    document: type[msgspec.Struct],
    read: Callable[[], msgspec.Struct],
    wrap: Callable[[Callable[[], Any]], Callable[[], Any]] = lambda call: call,
) -> list[Attribute]:
    """One attribute per field of an ops-contract document (pushgrid/ops/): names, types and
    descriptions from the contract; each getter reads the document (``read``, through ``wrap``
    when it must run on the event loop) and serves that field as plain JSON values. Inside
    :func:`one_read` the document is built once and every attribute is served from that build."""
    specs = attributes(document)

    def every_field() -> dict[str, Any]:
        built = read()
        return {spec.field: msgspec.to_builtins(getattr(built, spec.field)) for spec in specs}

    build_all = wrap(every_field)

    def getter(field: str) -> Callable[[], Any]:
        one = wrap(lambda: msgspec.to_builtins(getattr(read(), field)))

        def value() -> Any:
            built = _READ_TOGETHER.get()
            if built is None:
                return one()
            if id(build_all) not in built:
                built[id(build_all)] = build_all()
            return built[id(build_all)][field]

        return value

    return [Attribute(spec.name, spec.type, spec.description, getter(spec.field)) for spec in specs]


class Arg(NamedTuple):
    """One operation parameter: name, Java-like type name, description."""

    name: str
    type: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class Operation:
    """A callable operation; ``call`` gets the arguments converted to the declared types."""

    name: str
    args: Sequence[tuple[str, str, str]]
    ret: str
    description: str
    call: Callable[..., Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(Arg(*arg) for arg in self.args))

    @property
    def signature(self) -> tuple[Arg, ...]:
        return tuple(Arg(*arg) for arg in self.args)


class MBean:
    """A named, described set of attributes and operations."""

    __slots__ = ("_attributes", "_operations", "description", "object_name")

    def __init__(
        self,
        object_name: ObjectName | str,
        description: str,
        attributes: Sequence[Attribute] = (),
        operations: Sequence[Operation] = (),
    ) -> None:
        self.object_name = as_object_name(object_name)
        if self.object_name.is_pattern:
            raise MalformedObjectName(f"an MBean cannot be named by a pattern: {object_name}")
        self.description = description
        self._attributes = {attribute.name: attribute for attribute in attributes}
        self._operations = {operation.name: operation for operation in operations}

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return tuple(self._attributes.values())

    @property
    def operations(self) -> tuple[Operation, ...]:
        return tuple(self._operations.values())

    def attribute(self, name: str) -> Attribute | None:
        return self._attributes.get(name)

    def operation(self, name: str) -> Operation | None:
        return self._operations.get(name)

    def __repr__(self) -> str:
        return f"MBean({self.object_name.canonical!r})"


class MBeanRegistry:
    """Thread-safe map of canonical ObjectName -> MBean."""

    def __init__(self) -> None:
        self._beans: dict[str, MBean] = {}
        self._lock = threading.Lock()
        #: changes at every register / unregister (what a cached ``list`` tree is keyed by)
        self.generation = 0

    def register(self, mbean: MBean, *, replace: bool = False) -> MBean:
        key = mbean.object_name.canonical
        with self._lock:
            if not replace and key in self._beans:
                raise InstanceAlreadyExists(key)
            self._beans[key] = mbean
            self.generation += 1
        return mbean

    def unregister(self, name: ObjectName | str) -> bool:
        """Remove one MBean; False if it was not registered."""
        with self._lock:
            removed = self._beans.pop(as_object_name(name).canonical, None) is not None
            self.generation += removed
            return removed

    def get(self, name: ObjectName | str) -> MBean | None:
        """The MBean with exactly this name (in any key order), or None."""
        with self._lock:
            return self._beans.get(as_object_name(name).canonical)

    def match(self, pattern: ObjectName | str) -> list[MBean]:
        """MBeans whose name matches ``pattern`` (or equals it), sorted by canonical name."""
        query = as_object_name(pattern)
        with self._lock:
            beans = sorted(self._beans.items())
        if not query.is_pattern:
            return [bean for key, bean in beans if key == query.canonical]
        return [bean for _, bean in beans if query.matches(bean.object_name)]

    def names(self) -> list[ObjectName]:
        with self._lock:
            return [self._beans[key].object_name for key in sorted(self._beans)]

    def __len__(self) -> int:
        return len(self._beans)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, ObjectName | str):
            return False
        try:
            return self.get(name) is not None
        except MalformedObjectName:
            return False

    def __iter__(self) -> Iterator[MBean]:
        with self._lock:
            return iter([self._beans[key] for key in sorted(self._beans)])
