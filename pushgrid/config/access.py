"""The access part: who may subscribe and publish (entitlement), from where and how fast."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .fields import AddressList


class AccessSettings(BaseModel):
    """What the client port's admission is built from: the entitlement (``build_entitlement``,
    docs/security.md, docs/protocol.md 10), the publish guard's token buckets per connection and
    address (``build_publish_guard``) and the publish allow-list (``PushServer.may_publish``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    secret_files: ClassVar[tuple[tuple[str, str], ...]] = (
        ("entitlement_jwt_secret_file", "entitlement_jwt_secret"),
    )

    entitlement: str = Field(
        default="none", pattern=r"^(none|jwt|custom:[A-Za-z0-9_.-]+)$", alias="Entitlement"
    )
    entitlement_jwt_secret: str | None = Field(default=None, alias="EntitlementJwtSecret")
    entitlement_jwt_secret_file: Path | None = Field(default=None, alias="EntitlementJwtSecretFile")
    entitlement_jwt_public_key_file: Path | None = Field(
        default=None, alias="EntitlementJwtPublicKeyFile"
    )
    entitlement_jwt_require_exp: bool = Field(default=True, alias="EntitlementJwtRequireExp")
    entitlement_custom_timeout: float = Field(default=2.0, gt=0, alias="EntitlementCustomTimeout")
    entitlement_custom_cache_time: float = Field(
        default=30.0, ge=0, alias="EntitlementCustomCacheTime"
    )

    publish_rate_per_connection: float = Field(
        default=10_000.0, ge=0, alias="PublishRatePerConnection"
    )
    publish_rate_per_address: float = Field(default=20_000.0, ge=0, alias="PublishRatePerAddress")
    publish_burst: int = Field(default=10_000, ge=1, alias="PublishBurst")
    # IPv4/IPv6 addresses or CIDR ranges allowed to publish; empty: every address
    publish_allow: AddressList = Field(default=[], alias="PublishAllow")

    @model_validator(mode="after")
    def _access_consistent(self) -> AccessSettings:
        if self.entitlement == "jwt" and not (
            self.entitlement_jwt_secret or self.entitlement_jwt_public_key_file
        ):
            raise ValueError(
                "Entitlement = jwt needs EntitlementJwtSecret or EntitlementJwtPublicKeyFile"
            )
        return self
