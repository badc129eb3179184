"""MBean attributes from typed documents.

A document is a msgspec Struct whose encoded field names are the MBean's attribute names (in the
order the MBean lists them) and whose fields carry :func:`java` metadata: the Java-like type the
Jolokia ``list`` answer shows and the description. The server serves one attribute per field
(:func:`attributes`); the admin API decodes a ``read`` answer back into the document
(:func:`decode`), so a renamed attribute or a changed type breaks both sides at once, in a test.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from typing import Any, Final, NamedTuple, TypeVar

import msgspec

from pushgrid.protocol.exceptions import MonitoringError

STRING: Final = "java.lang.String"
MAP: Final = "java.util.Map"
LIST: Final = "java.util.List"

D = TypeVar("D", bound=msgspec.Struct)


class ContractError(MonitoringError, ValueError):
    """A member's answer does not fit the ops contract (a wrong type, a missing attribute)."""

    code = "contract"


def java(type_: str, description: str) -> msgspec.Meta:
    """The metadata of one attribute field: ``Annotated[int, java("long", "Connected users")]``."""
    return msgspec.Meta(description=description, extra={"java": type_})


class AttributeSpec(NamedTuple):
    """One MBean attribute of a document: its name, the document field, type and description."""

    name: str
    field: str
    type: str
    description: str


def _meta(annotation: Any) -> tuple[str, str] | None:
    """(Java type, description) of a field annotated with :func:`java`."""
    for extra in getattr(annotation, "__metadata__", ()):
        if isinstance(extra, msgspec.Meta) and extra.extra and "java" in extra.extra:
            return extra.extra["java"], extra.description or ""
    return None


@functools.cache
def attributes(document: type[msgspec.Struct]) -> tuple[AttributeSpec, ...]:
    """The attributes of a document, in field order (fields without :func:`java` are skipped)."""
    hints = typing.get_type_hints(document, include_extras=True)
    specs = []
    for field in msgspec.structs.fields(document):
        meta = _meta(hints[field.name])
        if meta is not None:
            specs.append(AttributeSpec(field.encode_name, field.name, *meta))
    return tuple(specs)


def names(view: type[msgspec.Struct]) -> list[str]:
    """The attribute names a view (a document or a part of one) reads, for a Jolokia ``read``."""
    return [field.encode_name for field in msgspec.structs.fields(view)]


def decode(document: type[D], values: Mapping[str, Any], what: str) -> D:
    """A ``read`` answer (``{attribute: value}``) as the document; :class:`ContractError` saying
    which attribute does not fit otherwise. ``what`` names the MBean for the message."""
    try:
        return msgspec.convert(values, document, strict=False)
    except msgspec.ValidationError as exc:
        raise ContractError(f"{what} does not fit the ops contract: {exc}") from None
