"""Value types and checks shared by the parts of the settings."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from pushgrid.kernel.addresses import parse_address


def split_list(value: Any) -> Any:
    """A comma-separated list from the file or the environment; a list passes through."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def check_addresses(values: list[str]) -> list[str]:
    for value in values:
        parse_address(value)
    return values


AddressList = Annotated[list[str], BeforeValidator(split_list)]
"""A ``host:port`` list (checked by the part that owns it)."""

NameList = Annotated[list[str], BeforeValidator(split_list)]
"""A comma-separated list of names, URLs or ranges."""
