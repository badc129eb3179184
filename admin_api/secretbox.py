"""Registered members' passwords encrypted at rest (issue 22 item 5).

The admin API must send a registered member's monitoring password to that member, so it cannot
keep only a hash: it keeps a Fernet token (AES-128-CBC + HMAC-SHA256, from ``cryptography``)
prefixed ``fernet:``. The key comes from ``Admin.SecretKey`` (any long secret; the Fernet key is
derived from it with HKDF-SHA256) or, by default, from the key file ``Admin.SecretKeyFile``
(created 0600 with a random key on first use, kept 0600). A copy of ``admin.db`` without the
key reveals no password. A value without the prefix is a password stored before this existed:
it is still usable and :meth:`~admin_api.services.members.MemberService.encrypt_stored`
encrypts it when the admin API starts.
"""

from __future__ import annotations

import base64
import functools
import os
from pathlib import Path
from typing import Final

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from pushgrid.config import AdminSettings, ConfigError

from .problems import ProblemError

SEALED_PREFIX: Final = "fernet:"
_HKDF_INFO: Final = b"pushgrid admin member passwords v1"


def _derived_key(secret: str) -> bytes:
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_HKDF_INFO).derive(
        secret.encode("utf-8")
    )
    return base64.urlsafe_b64encode(raw)


def _file_key(path: Path) -> bytes:
    """The key in ``path``, made (0600, random) when the file does not exist yet."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it meanwhile: use theirs
            pass
        else:
            with os.fdopen(fd, "wb") as out:
                out.write(Fernet.generate_key() + b"\n")
    os.chmod(path, 0o600)
    key = path.read_bytes().strip()
    try:
        Fernet(key)
    except ValueError as exc:
        raise ConfigError(f"Admin.SecretKeyFile {path}: not a Fernet key ({exc})") from None
    return key


class SecretBox:
    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    def seal(self, value: str | None) -> str | None:
        if value is None:
            return None
        return SEALED_PREFIX + self._fernet.encrypt(value.encode("utf-8")).decode("ascii")

    def open(self, value: str | None) -> str | None:
        if value is None or not is_sealed(value):
            return value  # stored before encryption existed (encrypted at the next start)
        try:
            return self._fernet.decrypt(value.removeprefix(SEALED_PREFIX)).decode("utf-8")
        except InvalidToken:
            raise ProblemError(
                500,
                "a stored member password cannot be decrypted: Admin.SecretKey or "
                "Admin.SecretKeyFile changed since it was stored; register the member again",
                "secret_key_changed",
            ) from None


def is_sealed(value: str | None) -> bool:
    return value is not None and value.startswith(SEALED_PREFIX)


@functools.lru_cache(maxsize=8)
def _box(secret: str | None, key_file: Path) -> SecretBox:
    return SecretBox(_derived_key(secret) if secret else _file_key(key_file))


def secret_box(settings: AdminSettings) -> SecretBox:
    """The box of these settings (made once per key)."""
    return _box(settings.admin_secret_key, settings.admin_secret_key_file)
