"""The one Settings object: every part composed, validated together at start-up.

Each subsystem receives only its part (``settings.server``, ``settings.cluster``, ...: the
classes in this package); the whole object is for the loader, the start-up code that hands the
parts out, and the views that show the configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pushgrid.kernel.addresses import parse_address

from .access import AccessSettings
from .admin import AdminSettings
from .alerts import AlertsSettings, TraceSettings
from .batching import BatchingSettings
from .cluster import ClusterSettings
from .deflate import DeflateSettings
from .engine import EngineLimitSettings
from .jmx import JmxSettings
from .listeners import ListenerSettings
from .monitoring import MonitoringSettings
from .occupancy import OccupancySettings
from .push import ServerSettings
from .session import SessionSettings
from .signin import SignInSettings
from .stats import StatsSettings
from .transport import TransportSettings

PARTS: dict[str, type[BaseModel]] = {
    "server": ServerSettings,
    "listeners": ListenerSettings,
    "transport": TransportSettings,
    "session": SessionSettings,
    "batching": BatchingSettings,
    "deflate": DeflateSettings,
    "engine_limits": EngineLimitSettings,
    "access": AccessSettings,
    "cluster": ClusterSettings,
    "monitoring": MonitoringSettings,
    "jmx": JmxSettings,
    "admin": AdminSettings,
    "stats": StatsSettings,
    "alerts": AlertsSettings,
    "trace": TraceSettings,
    "occupancy": OccupancySettings,
    "signin": SignInSettings,
}
"""Attribute of :class:`Settings` -> the part it hands out (every key is in exactly one)."""

_Part = TypeVar("_Part", bound=BaseModel)


class Settings(
    SignInSettings,
    OccupancySettings,
    AdminSettings,
    StatsSettings,
    TraceSettings,
    AlertsSettings,
    JmxSettings,
    MonitoringSettings,
    ClusterSettings,
    AccessSettings,
    EngineLimitSettings,
    DeflateSettings,
    BatchingSettings,
    SessionSettings,
    TransportSettings,
    ListenerSettings,
    ServerSettings,
    BaseSettings,
):
    """Every setting. The alias is the key in pushgrid.conf (see docs/configuration.md)."""

    model_config = SettingsConfigDict(
        extra="forbid", populate_by_name=True, validate_default=True, frozen=True
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Values come only from load_settings(), which tracks where each one came from.
        return (init_settings,)

    @model_validator(mode="before")
    @classmethod
    def _secrets_from_files(cls, data: Any) -> Any:
        """``...File`` keys of secrets: the secret is the file's content (one trailing newline
        dropped), so it need not sit in the shared config."""
        if not isinstance(data, dict):
            return data
        for part in PARTS.values():
            for file_key, key in getattr(part, "secret_files", ()):
                data = _secret_from_file(cls, data, file_key, key)
        return data

    @model_validator(mode="after")
    def _parts_consistent(self) -> Settings:
        """Checks across parts: the monitoring TLS listeners fall back on the client TLS files;
        one message of the session's hard frame limit fits the deflate part's inflating bounds."""
        if self.monitor_https_listen and not (
            (self.monitor_tls_certificate or self.tls_certificate)
            and (self.monitor_tls_key or self.tls_key)
        ):
            raise ValueError("MonitorHTTPS.Listen needs MonitorTLSCertificate and MonitorTLSKey")
        problem = self.inflating_problem(self.max_frame_size)
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _member_named_as_server(self) -> Settings:
        """``Admin.Members`` left at its default manages the server of this configuration under
        the server's own name (``ServerName``, by default the host name) at its first monitoring
        address: one name per member everywhere. It was ``local`` while the server called itself
        by the host name (meta-subjects, pipeline scope ``node:<host>``), so under ``make up``
        the console listed the only member twice (issue 34, 4.2)."""
        if "admin_members" in self.model_fields_set or not self.monitor_http_listen:
            return self
        host, port = parse_address(self.monitor_http_listen[0])
        host = "127.0.0.1" if host in ("", "*", "0.0.0.0", "::") else host
        host = f"[{host}]" if ":" in host else host
        # a validated model is frozen: the derived default is set once, here
        self.__dict__["admin_members"] = [f"{self.server_name}=http://{host}:{port}"]
        return self

    def _part(self, part: type[_Part]) -> _Part:
        # already validated as a whole: a part is a copy of its fields' values, made on each
        # access (a cache would outlive a model_copy; a copy is a handful of references)
        return part.model_construct(**{name: getattr(self, name) for name in part.model_fields})

    @property
    def server(self) -> ServerSettings:
        return self._part(ServerSettings)

    @property
    def listeners(self) -> ListenerSettings:
        return self._part(ListenerSettings)

    @property
    def transport(self) -> TransportSettings:
        return self._part(TransportSettings)

    @property
    def session(self) -> SessionSettings:
        return self._part(SessionSettings)

    @property
    def batching(self) -> BatchingSettings:
        return self._part(BatchingSettings)

    @property
    def deflate(self) -> DeflateSettings:
        return self._part(DeflateSettings)

    @property
    def engine_limits(self) -> EngineLimitSettings:
        return self._part(EngineLimitSettings)

    @property
    def access(self) -> AccessSettings:
        return self._part(AccessSettings)

    @property
    def cluster(self) -> ClusterSettings:
        return self._part(ClusterSettings)

    @property
    def monitoring(self) -> MonitoringSettings:
        return self._part(MonitoringSettings)

    @property
    def jmx(self) -> JmxSettings:
        return self._part(JmxSettings)

    @property
    def admin(self) -> AdminSettings:
        return self._part(AdminSettings)

    @property
    def stats(self) -> StatsSettings:
        return self._part(StatsSettings)

    @property
    def alerts(self) -> AlertsSettings:
        return self._part(AlertsSettings)

    @property
    def trace(self) -> TraceSettings:
        return self._part(TraceSettings)

    @property
    def occupancy(self) -> OccupancySettings:
        return self._part(OccupancySettings)

    @property
    def signin(self) -> SignInSettings:
        return self._part(SignInSettings)


def _secret_from_file(
    cls: type[BaseModel], data: dict[str, Any], file_key: str, key: str
) -> dict[str, Any]:
    path = data.get(file_key)
    if path in (None, ""):
        return data
    fields = cls.model_fields
    file_alias, alias = fields[file_key].alias, fields[key].alias
    if data.get(key) not in (None, ""):
        raise ValueError(f"set {alias} or {file_alias}, not both")
    try:
        secret = Path(path).read_text(encoding="utf-8").removesuffix("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{file_alias} = {path}: cannot read the secret file: {exc}") from None
    if not secret:
        raise ValueError(f"{file_alias} = {path}: the secret file is empty")
    return {**data, key: secret}
