"""The JMX bridge's part (docs/monitoring.md "JMX")."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pushgrid.kernel.addresses import parse_address


class JmxSettings(BaseModel):
    """What ``pushgrid jmx`` (the bridge and its query/check client) needs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    jmx_listen: str = Field(default="127.0.0.1:9010", alias="JmxListen")
    jmx_username: str | None = Field(default=None, alias="JmxUsername")
    jmx_password: str | None = Field(default=None, alias="JmxPassword")
    jmx_password_file: Path | None = Field(default=None, alias="JmxPasswordFile")
    jmx_access_file: Path | None = Field(default=None, alias="JmxAccessFile")
    jmx_refresh_interval: float = Field(default=1.0, gt=0, le=1.0, alias="JmxRefreshInterval")
    jmx_java: str = Field(default="java", alias="JmxJava")
    jmx_tls: bool = Field(default=False, alias="JmxTLS")
    jmx_tls_key_store: Path | None = Field(default=None, alias="JmxTLSKeyStore")
    jmx_tls_key_store_password: str | None = Field(default=None, alias="JmxTLSKeyStorePassword")
    jmx_tls_need_client_auth: bool = Field(default=False, alias="JmxTLSNeedClientAuth")
    jmx_tls_trust_store: Path | None = Field(default=None, alias="JmxTLSTrustStore")
    jmx_tls_trust_store_password: str | None = Field(default=None, alias="JmxTLSTrustStorePassword")

    @field_validator("jmx_listen")
    @classmethod
    def _jmx_address(cls, value: str) -> str:
        _host, port = parse_address(value)
        if port == 0:
            raise ValueError("JmxListen needs a fixed port (JMX clients must know it)")
        return value

    @model_validator(mode="after")
    def _jmx_consistent(self) -> JmxSettings:
        if (self.jmx_username is None) != (self.jmx_password is None):
            raise ValueError("set both JmxUsername and JmxPassword, or neither")
        if self.jmx_tls and (self.jmx_tls_key_store is None or not self.jmx_tls_key_store_password):
            raise ValueError("JmxTLS needs JmxTLSKeyStore and JmxTLSKeyStorePassword")
        if self.jmx_tls_need_client_auth and self.jmx_tls_trust_store is None:
            raise ValueError("JmxTLSNeedClientAuth needs JmxTLSTrustStore")
        return self
