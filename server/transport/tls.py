"""The TLS context of the encrypted listeners (``ListenEncrypted``, ``MonitorHTTPS.Listen``).

Built once at start-up, before anything listens. Every problem is a
:class:`~pushgrid.config.ConfigError` naming the configuration key and the file (exit 2, like
any other configuration error) instead of OpenSSL's ``PEM lib (_ssl.c:3905)``: each file is
read first, the certificate chain is parsed alone, then the key is loaded with it. An encrypted
key is opened with ``TLSKeyPassword`` (or ``TLSKeyPasswordFile``) and never prompts on the
terminal: without a password it is refused, naming the keys to set.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pushgrid.config import ConfigError

MinVersion = Literal["1.2", "1.3"]
MIN_VERSIONS: Final[dict[str, ssl.TLSVersion]] = {
    "1.2": ssl.TLSVersion.TLSv1_2,
    "1.3": ssl.TLSVersion.TLSv1_3,
}


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A certificate chain and its key, with the configuration keys that named them."""

    certificate: Path
    key: Path
    certificate_setting: str = "TLSCertificate"
    key_setting: str = "TLSKey"


@dataclass(frozen=True, slots=True)
class TlsPolicy:
    """What every encrypted listener shares: the key's password, ciphers, minimum version."""

    key_password: str | None = None
    ciphers: str | None = None  # an OpenSSL cipher list (TLS 1.2; TLS 1.3 keeps its suites)
    min_version: MinVersion = "1.2"


def _read(path: Path, setting: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{setting} = {path}: cannot read the file: {exc.strerror}") from None


def _check_certificate(files: TlsFiles) -> None:
    """The certificate file holds at least one PEM certificate, all of them well-formed."""
    where = f"{files.certificate_setting} = {files.certificate}"
    data = _read(files.certificate, files.certificate_setting)
    try:
        text = data.decode("ascii")
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_verify_locations(cadata=text)
    except (UnicodeDecodeError, ssl.SSLError) as exc:
        reason = exc.reason if isinstance(exc, ssl.SSLError) else "binary, not PEM text"
        raise ConfigError(f"{where}: not a PEM certificate chain ({reason})") from None


def server_context(files: TlsFiles, policy: TlsPolicy) -> ssl.SSLContext:
    """The server-side SSLContext, or ConfigError naming the key and the file at fault."""
    _read(files.key, files.key_setting)
    _check_certificate(files)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = MIN_VERSIONS[policy.min_version]
    if policy.ciphers is not None:
        try:
            context.set_ciphers(policy.ciphers)
        except ssl.SSLError:
            raise ConfigError(
                f"TLSCiphers = {policy.ciphers!r}: OpenSSL selects no cipher from this list"
            ) from None
    asked = False

    def password() -> str:
        """Called by OpenSSL for an encrypted key only: instead of its terminal prompt, the
        configured password (or an empty one, which fails: reported below)."""
        nonlocal asked
        asked = True
        return policy.key_password or ""

    key = f"{files.key_setting} = {files.key}"
    try:
        context.load_cert_chain(files.certificate, files.key, password)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            message = (
                f"{key}: the key does not match the certificate of "
                f"{files.certificate_setting} = {files.certificate}"
            )
        elif asked and not policy.key_password:
            message = (
                f"{key}: the key is encrypted: set TLSKeyPassword or TLSKeyPasswordFile "
                "(pushgrid never prompts for it)"
            )
        elif asked:
            message = f"{key}: cannot decrypt the key with TLSKeyPassword (wrong password?)"
        else:
            detail = f" ({exc.reason})" if exc.reason else ""
            message = f"{key}: not a PEM private key{detail}"
        raise ConfigError(message) from None
    return context
