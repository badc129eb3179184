"""The client listeners' part: where clients connect and the TLS of the encrypted ports."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from pushgrid.kernel.addresses import parse_address

from .fields import AddressList, check_addresses


class ListenerSettings(BaseModel):
    """What binds the client port (``PushServer.start``) and builds its TLS contexts
    (``build_tls_contexts``; the monitoring port's fall back on these files)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    secret_files: ClassVar[tuple[tuple[str, str], ...]] = (
        ("tls_key_password_file", "tls_key_password"),
    )

    listen: AddressList = Field(default=["*:8800"], alias="Listen")
    listen_encrypted: AddressList = Field(default=[], alias="ListenEncrypted")
    tls_certificate: Path | None = Field(default=None, alias="TLSCertificate")
    tls_key: Path | None = Field(default=None, alias="TLSKey")
    # the passphrase of an encrypted TLSKey (and MonitorTLSKey): pushgrid never prompts for it
    tls_key_password: SecretStr | None = Field(default=None, alias="TLSKeyPassword")
    tls_key_password_file: Path | None = Field(default=None, alias="TLSKeyPasswordFile")
    tls_ciphers: str | None = Field(default=None, min_length=1, alias="TLSCiphers")
    tls_min_version: Literal["1.2", "1.3"] = Field(default="1.2", alias="TLSMinVersion")
    listen_reuse_port: bool = Field(default=False, alias="ListenReusePort")
    # connections the kernel queues per client listener before accept: a member's clients all
    # reconnect at once when another member dies (the kernel caps it at net.core.somaxconn)
    listen_backlog: int = Field(default=4096, ge=1, le=65535, alias="ListenBacklog")

    @field_validator("listen", "listen_encrypted")
    @classmethod
    def _client_listen(cls, value: list[str]) -> list[str]:
        return check_addresses(value)

    @model_validator(mode="after")
    def _listeners_consistent(self) -> ListenerSettings:
        if not self.listen and not self.listen_encrypted:
            raise ValueError("set Listen or ListenEncrypted: the server needs a client port")
        if self.listen_encrypted and (self.tls_certificate is None or self.tls_key is None):
            raise ValueError("ListenEncrypted needs TLSCertificate and TLSKey")
        return self

    @property
    def listen_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.listen]

    @property
    def listen_encrypted_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.listen_encrypted]
