"""TLS configuration of a real server (issue 23 item 5): every bad certificate, key, password,
cipher list or version stops ``pushgrid server`` with exit 2 and a message naming the key and
the file (never OpenSSL's ``PEM lib (_ssl.c:3905)``, never a password prompt); an encrypted key
opens with ``TLSKeyPassword`` / ``TLSKeyPasswordFile``; ``TLSMinVersion`` and ``TLSCiphers``
hold on a real listener."""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from websockets.asyncio.client import connect

from .pgtest import (
    DEFAULT_TIMEOUT,
    free_port,
    run_cli,
    self_signed_certificate,
    write_conf,
)

pytestmark = pytest.mark.timeout(120)
PASSWORD = "correct horse"


class Files:
    def __init__(self, root: Path) -> None:
        self.cert, self.key = self_signed_certificate(root / "a")
        self.other_cert, self.other_key = self_signed_certificate(root / "b")
        private = serialization.load_pem_private_key(self.key.read_bytes(), None)
        self.encrypted = root / "encrypted-key.pem"
        self.encrypted.write_bytes(
            private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(PASSWORD.encode()),
            )
        )
        self.garbage = root / "garbage.pem"
        self.garbage.write_text("this is not PEM\n", encoding="utf-8")
        self.missing = root / "missing.pem"
        self.password_file = root / "password.txt"
        self.password_file.write_text(PASSWORD + "\n", encoding="utf-8")
        self.root = root


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    return Files(tmp_path_factory.mktemp("tls-files"))


def _server(files: Files, **keys: Any) -> subprocess.CompletedProcess[str]:
    settings = {
        "Listen": "",
        "ListenEncrypted": f"127.0.0.1:{free_port()}",
        "MonitorHTTP.Listen": "",
        "MetricsArchive": "",
        "TLSCertificate": str(files.cert),
        "TLSKey": str(files.key),
        **keys,
    }
    path = write_conf(files.root / f"bad-{free_port()}.conf", settings)
    # stdin closed: a prompt for the key's password would fail or hang, never answer
    return run_cli("server", "--config", str(path), env={}, timeout=60)


def _bad_cases(files: Files) -> list[tuple[dict[str, str], list[str]]]:
    return [
        (
            {"TLSCertificate": str(files.missing)},
            [f"TLSCertificate = {files.missing}", "cannot read the file", "No such file"],
        ),
        (
            {"TLSKey": str(files.missing)},
            [f"TLSKey = {files.missing}", "cannot read the file"],
        ),
        (
            {"TLSCertificate": str(files.garbage)},
            [f"TLSCertificate = {files.garbage}", "not a PEM certificate chain"],
        ),
        (
            {"TLSKey": str(files.garbage)},
            [f"TLSKey = {files.garbage}", "not a PEM private key"],
        ),
        (
            {"TLSKey": str(files.other_key)},
            [
                f"TLSKey = {files.other_key}",
                f"does not match the certificate of TLSCertificate = {files.cert}",
            ],
        ),
        (
            {"TLSKey": str(files.encrypted)},
            [f"TLSKey = {files.encrypted}", "encrypted", "TLSKeyPassword", "TLSKeyPasswordFile"],
        ),
        (
            {"TLSKey": str(files.encrypted), "TLSKeyPassword": "wrong"},
            [f"TLSKey = {files.encrypted}", "cannot decrypt", "TLSKeyPassword"],
        ),
        (
            {"TLSKey": str(files.encrypted), "TLSKeyPasswordFile": str(files.missing)},
            [f"TLSKeyPasswordFile = {files.missing}", "cannot read the secret file"],
        ),
        ({"TLSCiphers": "NO-SUCH-CIPHER"}, ["TLSCiphers = 'NO-SUCH-CIPHER'", "no cipher"]),
        ({"TLSMinVersion": "1.1"}, ["TLSMinVersion = '1.1'", "'1.2' or '1.3'"]),
        (
            {
                "MonitorHTTPS.Listen": f"127.0.0.1:{free_port()}",
                "MonitorTLSKey": str(files.garbage),
            },
            [f"MonitorTLSKey = {files.garbage}", "not a PEM private key"],
        ),
    ]


CASE_IDS = [
    "cert-missing",
    "key-missing",
    "cert-not-pem",
    "key-not-pem",
    "key-mismatch",
    "encrypted-no-password",
    "wrong-password",
    "password-file-missing",
    "bad-ciphers",
    "bad-min-version",
    "monitor-key-not-pem",
]


@pytest.mark.parametrize("case", range(len(CASE_IDS)), ids=CASE_IDS)
def test_a_bad_tls_setting_exits_2_naming_the_key_and_the_file(files: Files, case: int) -> None:
    keys, needles = _bad_cases(files)[case]
    result = _server(files, **keys)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "pushgrid: configuration error" in result.stderr
    for needle in needles:
        assert needle in result.stderr, f"{needle!r} not in:\n{result.stderr}"
    assert "_ssl.c" not in result.stderr
    assert "Traceback" not in result.stderr
    assert "listening on" not in result.stderr


# --- real listeners ------------------------------------------------------------------------------


def _client_context(files: Files, **options: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(files.cert))
    for name, value in options.items():
        setattr(context, name, value)
    return context


@pytest.mark.parametrize("source", ["TLSKeyPassword", "TLSKeyPasswordFile"])
async def test_an_encrypted_key_opens_with_its_password(
    files: Files, server_factory: Any, source: str
) -> None:
    port = free_port()
    value = PASSWORD if source == "TLSKeyPassword" else str(files.password_file)
    server_factory(
        ListenEncrypted=f"127.0.0.1:{port}",
        TLSCertificate=str(files.cert),
        TLSKey=str(files.encrypted),
        MetaSubjectInterval=0,
        **{source: value},
    )
    async with connect(
        f"wss://127.0.0.1:{port}/ws",
        ssl=_client_context(files),
        open_timeout=DEFAULT_TIMEOUT,
        compression=None,
    ) as ws:
        welcome = json.loads(await ws.recv())
    assert welcome["type"] == "welcome"


def _handshake(port: int, context: ssl.SSLContext) -> tuple[str, str]:
    """(TLS version, cipher) of a handshake with the listener; ssl.SSLError when refused."""
    with (
        httpx.Client(verify=context, trust_env=False, timeout=DEFAULT_TIMEOUT) as client,
        client.stream("GET", f"https://127.0.0.1:{port}/health") as response,
    ):
        assert response.status_code == 200
        tls = response.extensions["network_stream"].get_extra_info("ssl_object")
        version, cipher = tls.version(), tls.cipher()[0]
    return version, cipher


def test_min_version_1_3_refuses_a_tls_1_2_client(files: Files, server_factory: Any) -> None:
    port = free_port()
    server_factory(
        ListenEncrypted=f"127.0.0.1:{port}",
        TLSCertificate=str(files.cert),
        TLSKey=str(files.key),
        TLSMinVersion="1.3",
        MetaSubjectInterval=0,
    )
    assert _handshake(port, _client_context(files))[0] == "TLSv1.3"
    old_client = _client_context(files, maximum_version=ssl.TLSVersion.TLSv1_2)
    with pytest.raises(httpx.ConnectError):
        _handshake(port, old_client)


def test_ciphers_restrict_what_a_tls_1_2_client_may_use(files: Files, server_factory: Any) -> None:
    allowed = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
    port = free_port()
    server_factory(
        ListenEncrypted=f"127.0.0.1:{port}",
        TLSCertificate=str(files.cert),
        TLSKey=str(files.key),
        TLSCiphers=allowed,
        MetaSubjectInterval=0,
    )
    tls12 = _client_context(files, maximum_version=ssl.TLSVersion.TLSv1_2)
    version, cipher = _handshake(port, tls12)
    assert version == "TLSv1.2"
    assert cipher in allowed.split(":")
    other = _client_context(files, maximum_version=ssl.TLSVersion.TLSv1_2)
    other.set_ciphers("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384")
    with pytest.raises(httpx.ConnectError):
        _handshake(port, other)
