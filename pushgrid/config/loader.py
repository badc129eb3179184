"""Loading the Settings from ``pushgrid.conf`` and ``PUSHGRID_<KEY>`` variables.

File syntax: one ``Key = value`` per line, ``#`` starts a comment line, lists are comma
separated. Key names follow the spec (``Listen``, ``PublishSnapshotMessage``, ...). The variable
for a key is ``PUSHGRID_`` + the key in upper case with ``.`` replaced by ``_``
(``MonitorHTTP.Listen`` -> ``PUSHGRID_MONITORHTTP_LISTEN``) and wins over the file.
Any unknown key or bad value stops start-up with a :class:`ConfigError` naming where it came
from. Nothing else in pushgrid reads the environment.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import SecretStr, ValidationError

from pushgrid.kernel.redaction import redact_input, redact_text
from pushgrid.protocol.exceptions import PushgridError

from .settings import Settings

ENV_PREFIX = "PUSHGRID_"


class ConfigError(PushgridError):
    """A configuration problem, with the place it came from (file:line or variable)."""

    code = "config"


@dataclass(frozen=True)
class _Origin:
    where: str  # "file:line" or "environment variable NAME"


def _keys() -> dict[str, str]:
    """Config key (case-insensitive) -> field name."""
    return {(info.alias or name).lower(): name for name, info in Settings.model_fields.items()}


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean X?)`` naming the closest of ``choices`` to a mistyped ``word``
    (case-insensitive, difflib's ratio of at least 0.6), or ``""`` when none is close."""
    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]}?)" if close else ""


def config_keys() -> list[str]:
    """Every configuration key, as docs/configuration.md spells it."""
    return [info.alias or name for name, info in Settings.model_fields.items()]


def env_name(key: str) -> str:
    return ENV_PREFIX + key.upper().replace(".", "_")


def read_config_file(path: Path) -> dict[str, tuple[str, _Origin]]:
    """Parse ``Key = value`` lines; raise :class:`ConfigError` naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc.reason}") from None
    keys = _keys()
    values: dict[str, tuple[str, _Origin]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{path}:{number}"
        key, sep, value = stripped.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{where}: expected 'Key = value', got {stripped!r}")
        field = keys.get(key.lower())
        if field is None:
            hint = did_you_mean(key, config_keys()) or " (see docs/configuration.md)"
            raise ConfigError(f"{where}: unknown key {key!r}{hint}")
        if field in values:
            raise ConfigError(f"{where}: {key} is set twice (first at {values[field][1].where})")
        values[field] = (value.strip(), _Origin(where))
    return values


def read_environment(environ: Mapping[str, str]) -> dict[str, tuple[str, _Origin]]:
    by_env = {env_name(info.alias or name): name for name, info in Settings.model_fields.items()}
    values: dict[str, tuple[str, _Origin]] = {}
    for variable, value in environ.items():
        if not variable.startswith(ENV_PREFIX):
            continue
        field = by_env.get(variable)
        if field is None:
            hint = did_you_mean(variable, by_env)
            raise ConfigError(f"environment variable {variable}: unknown pushgrid setting{hint}")
        values[field] = (value, _Origin(f"environment variable {variable}"))
    return values


def load_settings(
    path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Build the Settings: defaults < file < environment < keyword overrides (tests, CLI)."""
    raw: dict[str, tuple[Any, _Origin]] = {}
    if path is not None:
        raw.update(read_config_file(path))
    raw.update(read_environment(os.environ if environ is None else environ))
    for name, value in overrides.items():
        raw[name] = (value, _Origin(f"argument {name}"))
    data = {name: value for name, (value, _) in raw.items()}
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, raw)) from None


def _origin_of(
    message: str, raw: Mapping[str, tuple[Any, _Origin]], aliases: Mapping[str, str]
) -> str:
    """Where the key a cross-key message starts with was set ("configuration" if nowhere)."""
    first = message.split(maxsplit=1)[0].rstrip(":") if message else ""
    for name, alias in aliases.items():
        if alias == first and name in raw:
            return raw[name][1].where
    return "configuration"


def _holds_text(field: str) -> bool:
    """True when the setting ``field`` is text (``str``, a secret, a list of text), so a value
    given for it may be a secret; numbers, booleans, durations and paths never are."""

    def textual(annotation: Any) -> bool:
        return annotation in (str, SecretStr) or any(textual(a) for a in get_args(annotation))

    return textual(Settings.model_fields[field].annotation)


def _describe(exc: ValidationError, raw: Mapping[str, tuple[Any, _Origin]]) -> str:
    aliases = {name: info.alias or name for name, info in Settings.model_fields.items()}
    lines = []
    for error in exc.errors():
        loc = error["loc"][0] if error["loc"] else None
        message = error["msg"].removeprefix("Value error, ")
        if isinstance(loc, str) and loc in raw:
            value, origin = raw[loc]
            key = aliases.get(loc, loc)
            # an error message is configuration shown too
            shown = redact_input(key, value, holds_text=_holds_text(loc))
            if isinstance(value, str) and value and shown != value:
                message = message.replace(value, str(shown))
            lines.append(f"{origin.where}: {key} = {shown!r}: {redact_text(message)}")
        elif isinstance(loc, str) and loc in aliases:
            lines.append(f"{aliases[loc]}: {message}")
        else:
            lines.append(f"{_origin_of(message, raw, aliases)}: {message}")
    return "\n".join(lines)
