"""The one Settings object, composed of one part per subsystem, and its loader.

``loader`` reads ``pushgrid.conf`` and ``PUSHGRID_<KEY>`` variables and validates everything as
one :class:`Settings` at start-up; each subsystem then receives only its part
(``settings.server``, ``.cluster``, ``.monitoring``, ``.jmx``, ``.admin``, ``.stats``,
``.alerts``, ``.trace``), whose fields and checks live in this package's module of that name.
"""

from __future__ import annotations

from .admin import AdminSettings
from .alerts import AlertsSettings, TraceSettings
from .cluster import ClusterSettings, default_seed_count
from .jmx import JmxSettings
from .loader import (
    ENV_PREFIX,
    ConfigError,
    config_keys,
    did_you_mean,
    env_name,
    load_settings,
    read_config_file,
    read_environment,
)
from .monitoring import MonitoringSettings
from .push import ServerSettings
from .settings import PARTS, Settings
from .stats import StatsSettings

__all__ = [
    "ENV_PREFIX",
    "PARTS",
    "AdminSettings",
    "AlertsSettings",
    "ClusterSettings",
    "ConfigError",
    "JmxSettings",
    "MonitoringSettings",
    "ServerSettings",
    "Settings",
    "StatsSettings",
    "TraceSettings",
    "config_keys",
    "default_seed_count",
    "did_you_mean",
    "env_name",
    "load_settings",
    "read_config_file",
    "read_environment",
]
