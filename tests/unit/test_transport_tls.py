"""The TLS keys of the configuration (issue 23 item 5): TLSKeyPassword (or a file holding it)
is a secret nobody prints, TLSMinVersion maps onto OpenSSL's versions. Real listeners and every
bad file: tests/integration/test_tls_config.py."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from pushgrid.config import ConfigError, load_settings
from pushgrid.server.monitoring.beans import configuration
from pushgrid.server.transport.tls import MIN_VERSIONS, TlsPolicy


def test_the_key_password_is_a_secret() -> None:
    settings = load_settings(None, environ={"PUSHGRID_TLSKEYPASSWORD": "hunter2"})
    assert settings.tls_key_password is not None
    assert settings.tls_key_password.get_secret_value() == "hunter2"
    assert "hunter2" not in repr(settings)
    assert "hunter2" not in str(configuration(settings))  # Jolokia's Configuration attribute


def test_the_key_password_may_come_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("from a file\n", encoding="utf-8")
    settings = load_settings(None, environ={}, tls_key_password_file=str(secret))
    assert settings.tls_key_password is not None
    assert settings.tls_key_password.get_secret_value() == "from a file"
    with pytest.raises(ConfigError, match="TLSKeyPassword or TLSKeyPasswordFile, not both"):
        load_settings(
            None, environ={"PUSHGRID_TLSKEYPASSWORD": "x"}, tls_key_password_file=str(secret)
        )


def test_min_version_and_ciphers() -> None:
    assert load_settings(None, environ={}).tls_min_version == "1.2"
    assert {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3} == MIN_VERSIONS
    with pytest.raises(ConfigError, match="TLSMinVersion"):
        load_settings(None, environ={"PUSHGRID_TLSMINVERSION": "1.0"})
    with pytest.raises(ConfigError, match="TLSCiphers"):
        load_settings(None, environ={"PUSHGRID_TLSCIPHERS": ""})
    assert TlsPolicy().min_version == "1.2"
