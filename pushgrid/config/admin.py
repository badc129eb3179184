"""The admin API's part: its listener, the members it manages and its trust keys."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pushgrid.kernel.addresses import parse_address

from .fields import AddressList, NameList

MEMBER_URL_SCHEMES = ("http://", "https://", "service:jmx:")


class AdminSettings(BaseModel):
    """What the admin API (and the console it serves) needs of its own."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    admin_listen: str = Field(default="127.0.0.1:8080", alias="Admin.Listen")
    admin_members: AddressList = Field(
        default=["local=http://127.0.0.1:8900"], alias="Admin.Members"
    )
    admin_member_username: str | None = Field(default=None, alias="Admin.MemberUsername")
    admin_member_password: str | None = Field(default=None, alias="Admin.MemberPassword")
    admin_stale_after: float = Field(default=900.0, gt=0, alias="Admin.StaleAfter")
    # every member's per-second samples kept in memory for the console's charts (ADR 026):
    # 64 bytes a member-second, 230 KB a member-hour
    admin_history_seconds: int = Field(default=3600, ge=60, le=86400, alias="Admin.HistorySeconds")
    # Trust (docs/security.md "Admin API"): discovered members whose monitoring URL matches
    # get the reporting member's credentials
    admin_discover_allow: NameList = Field(default=[], alias="Admin.DiscoverAllow")
    # registered members' passwords are encrypted at rest with a key from one of these
    admin_secret_key: str | None = Field(default=None, alias="Admin.SecretKey")
    admin_secret_key_file: Path = Field(
        default=Path("data/admin-secret.key"), alias="Admin.SecretKeyFile"
    )

    @field_validator("admin_listen")
    @classmethod
    def _admin_address(cls, value: str) -> str:
        parse_address(value)
        return value

    @field_validator("admin_members")
    @classmethod
    def _members(cls, values: list[str]) -> list[str]:
        for value in values:
            name, sep, url = value.partition("=")
            if not sep or not name.strip() or not url.strip().startswith(MEMBER_URL_SCHEMES):
                raise ValueError(
                    f"{value!r} is not name=http(s)://host:port or name=service:jmx:... (a member)"
                )
        return values
