"""Secrets hidden wherever configuration, URLs or log lines are shown (issue 22, docs/security.md).

The rules are data:

* a text setting whose **key ends with** a word of :data:`SECRET_KEY` (password, secret, token,
  key, webhook, credential, in any case) shows as ``********``: the last word of a key names what
  it holds, so ``Occupancy.WebhookSecret`` is a secret but ``Occupancy.WebhookQueue`` (a number)
  is not. The keys naming a *file* (``...File``, ``...Store``) or holding a path, a number, a
  boolean or a duration are never masked whole: the path is not the secret, the file's content is;
* inside any other value, the password of a URL's userinfo (``postgresql://user:pw@host``) and the
  value of a query parameter whose name matches :data:`SECRET_PARAMETER` (``?token=...``) show as
  ``********``.

:func:`redact_setting` applies both to one configuration entry, :func:`redact_text` the second to
any text (a log line, an error message), :func:`redact_url_path` reduces a URL to its origin for a
log line (a Slack-style webhook carries its secret in the path).
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit

MASK = "********"

#: words naming a secret, in a key or a query-parameter name
_SECRET_WORD = r"passw(or)?ds?|secrets?|tokens?|keys?|webhooks?|credentials?"  # nosec B105
#: setting keys that hold a secret: the key's *last* word names one (``ClusterPassword``,
#: ``Alerts.Webhook``); ``Occupancy.WebhookQueue`` or ``Alerts.WebhookRetries`` merely mention one
SECRET_KEY = re.compile(rf"({_SECRET_WORD})$", re.I)
#: query-parameter names that carry a secret (``?token=``, ``?api_key=``, ``?sig=``, ...)
SECRET_PARAMETER = re.compile(rf"{_SECRET_WORD}|auth|sig(nature)?|^pw$|^pwd$", re.I)
#: keys that name a file or a key store holding a secret: the path is shown
FILE_KEY = re.compile(r"(File|Store)$")
#: scheme://user:password@ — the password part
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<pw>[^@\s/]*)@")
#: ?name=value / &name=value / ;name=value with a secret-looking name
_QUERY_SECRET = re.compile(r"(?P<head>[?&;](?P<name>[^=&\s#;?]+)=)(?P<value>[^&\s#;\"']*)")


def is_secret_key(key: str) -> bool:
    """True when a setting called ``key`` holds a secret itself (not the path of one)."""
    return bool(SECRET_KEY.search(key)) and not FILE_KEY.search(key)


def redact_text(text: str) -> str:
    """``text`` with URL passwords and secret query parameters masked."""
    if "://" not in text and "=" not in text:
        return text
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    return _QUERY_SECRET.sub(_query_value, text)


def _query_value(match: re.Match[str]) -> str:
    if SECRET_PARAMETER.search(match["name"]) and match["value"]:
        return match["head"] + MASK
    return match[0]


def redact_setting(key: str, value: Any) -> Any:
    """One configuration entry as it may be shown: secrets masked, other values scanned.

    Only text can be a secret: numbers, booleans and paths (a key file's *name*) show as they
    are, whatever the key."""
    if isinstance(value, str):
        return MASK if value and is_secret_key(key) else redact_text(value)
    if isinstance(value, list | tuple):
        return [redact_setting(key, item) for item in value]
    return value


def redact_input(key: str, value: Any, *, holds_text: bool) -> Any:
    """A value as it was given (the text of a file line or a variable) for an error message.

    ``holds_text`` says whether the setting itself is text: a number, boolean, duration or path
    written as text is no secret whatever its key (``Occupancy.WebhookQueue = 0``), though a URL
    password inside it is still masked."""
    if holds_text:
        return redact_setting(key, value)
    return redact_text(value) if isinstance(value, str) else value


def redact_url_path(url: str) -> str:
    """A URL reduced to ``scheme://host[:port]/…`` for a log line (no userinfo, path or query)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<url>"
    return f"{parts.scheme}://{host}{port}/…"


class RedactingFilter(logging.Filter):
    """A logging filter that masks URL passwords, secret query parameters and the given secret
    strings (e.g. the alert webhook URL) in every record it sees; it never drops a record."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        super().__init__("")
        self.secrets = sorted({s for s in secrets or [] if s and len(s) >= 4}, key=len)[::-1]

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        cleaned = redact_text(message)
        for secret in self.secrets:
            if secret in cleaned:
                shown = redact_url_path(secret) if "://" in secret else MASK
                cleaned = cleaned.replace(secret, shown)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
