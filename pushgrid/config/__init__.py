"""The one Settings object, composed of one part per subsystem, and its loader.

``loader`` reads ``pushgrid.conf`` and ``PUSHGRID_<KEY>`` variables and validates everything as
one :class:`Settings` at start-up; each subsystem then receives only its part
(``settings.server``, ``.listeners``, ``.transport``, ``.session``, ``.batching``, ``.deflate``,
``.engine_limits``, ``.access``, ``.cluster``, ``.monitoring``, ``.jmx``, ``.admin``, ``.stats``,
``.alerts``, ``.trace``, ``.occupancy``: ``PARTS``), whose fields and checks live in this
package's module of that name (``server``: push.py, ``engine_limits``: engine.py).
"""

from __future__ import annotations

from .access import AccessSettings
from .admin import AdminSettings
from .alerts import AlertsSettings, TraceSettings
from .batching import BatchingSettings
from .cluster import ClusterSettings, default_seed_count
from .deflate import DeflateSettings
from .engine import EngineLimitSettings
from .jmx import JmxSettings
from .listeners import ListenerSettings
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
from .occupancy import OccupancySettings
from .push import ServerSettings
from .session import SessionSettings
from .settings import PARTS, Settings
from .signin import SignInSettings
from .stats import StatsSettings
from .transport import TransportSettings

__all__ = [
    "ENV_PREFIX",
    "PARTS",
    "AccessSettings",
    "AdminSettings",
    "AlertsSettings",
    "BatchingSettings",
    "ClusterSettings",
    "ConfigError",
    "DeflateSettings",
    "EngineLimitSettings",
    "JmxSettings",
    "ListenerSettings",
    "MonitoringSettings",
    "OccupancySettings",
    "ServerSettings",
    "SessionSettings",
    "Settings",
    "SignInSettings",
    "StatsSettings",
    "TraceSettings",
    "TransportSettings",
    "config_keys",
    "default_seed_count",
    "did_you_mean",
    "env_name",
    "load_settings",
    "read_config_file",
    "read_environment",
]
