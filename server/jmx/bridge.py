"""Start the JVM bridge (deploy/jmx/Bridge.java) for the member one pushgrid.conf describes.

The bridge reads the member's Jolokia endpoint (``MonitorHTTP.Listen`` + ``MonitorUsername``/
``MonitorPassword``) and serves its MBeans over JMX RMI on ``JmxListen``. The JMX connector is the
JDK's own agent, configured through a ``management.properties`` file that :func:`prepare` writes
with the password, access and TLS files into a private directory (mode 0700, files 0600: the JDK
refuses a password file others can read). Secrets go into files or the child's environment, never
onto its command line (``ps`` shows command lines to every user).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pushgrid.config import JmxSettings, MonitoringSettings
from pushgrid.kernel.addresses import parse_address
from pushgrid.kernel.jmxquery import BRIDGE_SOURCE, JAVA_HINT
from pushgrid.protocol.exceptions import MonitoringError


class BridgeError(MonitoringError):
    """The bridge cannot be started (the message says what to change)."""

    code = "jmx_bridge"


@dataclass(frozen=True, slots=True)
class BridgeLaunch:
    """Everything needed to run the bridge: command, environment, the JMX URL it serves."""

    command: list[str]
    env: dict[str, str]
    jmx_url: str
    jolokia_url: str


def jmx_url(host: str, port: int) -> str:
    """The JMX service URL clients use for a bridge on ``host:port``."""
    if ":" in host:
        host = f"[{host}]"
    return f"service:jmx:rmi:///jndi/rmi://{host}:{port}/jmxrmi"


def find_java(java: str) -> str:
    """The java executable (a path or a name on PATH), or :class:`BridgeError` naming the fix."""
    found = shutil.which(java)
    if found is None:
        raise BridgeError(f"java not found ({java!r}): {JAVA_HINT}")
    return found


def _jolokia_url(monitoring: MonitoringSettings) -> str:
    if not monitoring.monitor_addresses:
        raise BridgeError(
            "the member has no plain monitoring port: set MonitorHTTP.Listen (the bridge reads "
            "its Jolokia endpoint)"
        )
    host, port = monitoring.monitor_addresses[0]
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{host}:{port}/jolokia"


def _credentials(jmx: JmxSettings, monitoring: MonitoringSettings) -> tuple[str, str] | None:
    """The JMX login configured by JmxUsername/JmxPassword, else the monitoring one."""
    if jmx.jmx_username is not None and jmx.jmx_password is not None:
        return jmx.jmx_username, jmx.jmx_password
    return _monitor_login(monitoring)


def _monitor_login(monitoring: MonitoringSettings) -> tuple[str, str] | None:
    if monitoring.monitor_username is not None and monitoring.monitor_password is not None:
        return monitoring.monitor_username, monitoring.monitor_password
    return None


def _write_private(path: Path, text: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    return path


def _user_files(
    settings: JmxSettings, monitoring: MonitoringSettings, workdir: Path
) -> tuple[Path, Path]:
    """(password file, access file): the configured ones or ones written for JmxUsername."""
    login = _credentials(settings, monitoring)
    if settings.jmx_password_file is not None:
        password_file = settings.jmx_password_file
        if not password_file.is_file():
            raise BridgeError(f"JmxPasswordFile {password_file} does not exist")
        if password_file.stat().st_mode & 0o077:
            raise BridgeError(
                f"JmxPasswordFile {password_file} is readable by others: chmod 600 it (the JDK "
                "refuses it otherwise)"
            )
    elif login is not None:
        user, password = login
        if any(ch.isspace() for ch in user + password):
            raise BridgeError("JmxUsername and JmxPassword may not contain spaces")
        password_file = _write_private(workdir / "jmxremote.password", f"{user} {password}\n")
    else:
        raise BridgeError(
            "JMX needs credentials: set JmxUsername and JmxPassword (or JmxPasswordFile), or "
            "MonitorUsername and MonitorPassword"
        )
    if settings.jmx_access_file is not None:
        if not settings.jmx_access_file.is_file():
            raise BridgeError(f"JmxAccessFile {settings.jmx_access_file} does not exist")
        return password_file, settings.jmx_access_file
    if login is None:
        raise BridgeError("JmxPasswordFile needs JmxAccessFile (who may read, who may write)")
    access = _write_private(workdir / "jmxremote.access", f"{login[0]} readwrite\n")
    return password_file, access


def _tls_properties(settings: JmxSettings, workdir: Path) -> list[str]:
    if not settings.jmx_tls:
        return ["com.sun.management.jmxremote.ssl=false"]
    ssl = [
        f"javax.net.ssl.keyStore={settings.jmx_tls_key_store}",
        f"javax.net.ssl.keyStorePassword={settings.jmx_tls_key_store_password}",
    ]
    if settings.jmx_tls_trust_store is not None:
        ssl.append(f"javax.net.ssl.trustStore={settings.jmx_tls_trust_store}")
        if settings.jmx_tls_trust_store_password:
            ssl.append(f"javax.net.ssl.trustStorePassword={settings.jmx_tls_trust_store_password}")
    ssl_file = _write_private(workdir / "ssl.properties", "\n".join(ssl) + "\n")
    need_auth = "true" if settings.jmx_tls_need_client_auth else "false"
    # The registry stays plain (it only hands out the connection stub; logins and values travel
    # over the TLS RMI connection): clients such as jmxquery cannot look up a TLS registry. With
    # a plain registry the JDK needs the RMI objects on another port: JmxListen's port + 1.
    return [
        "com.sun.management.jmxremote.ssl=true",
        "com.sun.management.jmxremote.registry.ssl=false",
        f"com.sun.management.jmxremote.ssl.need.client.auth={need_auth}",
        f"com.sun.management.jmxremote.ssl.config.file={ssl_file}",
    ]


def rmi_port(settings: JmxSettings) -> int:
    """The port of the RMI objects: JmxListen's, or the next one with TLS (see above)."""
    port = parse_address(settings.jmx_listen)[1]
    return port + 1 if settings.jmx_tls else port


def prepare(settings: JmxSettings, monitoring: MonitoringSettings, workdir: Path) -> BridgeLaunch:
    """Write the private JMX agent files into ``workdir`` and return how to run the bridge.

    The bridge serves the member's monitoring port over JMX: of the monitoring part it reads
    that port's address and login."""
    java = find_java(settings.jmx_java)
    if not BRIDGE_SOURCE.is_file():
        raise BridgeError(f"the bridge source {BRIDGE_SOURCE} is missing (reinstall pushgrid)")
    workdir.mkdir(parents=True, exist_ok=True)
    os.chmod(workdir, 0o700)
    host, port = parse_address(settings.jmx_listen)
    password_file, access_file = _user_files(settings, monitoring, workdir)
    properties = [
        f"com.sun.management.jmxremote.port={port}",
        f"com.sun.management.jmxremote.rmi.port={rmi_port(settings)}",
        f"com.sun.management.jmxremote.host={host}",
        "com.sun.management.jmxremote.local.only=false",
        "com.sun.management.jmxremote.authenticate=true",
        f"com.sun.management.jmxremote.password.file={password_file}",
        f"com.sun.management.jmxremote.access.file={access_file}",
        *_tls_properties(settings, workdir),
    ]
    config = _write_private(workdir / "management.properties", "\n".join(properties) + "\n")
    # The stubs handed to clients carry this name: on a wildcard JmxListen, the machine's name
    # (clients must resolve it to this machine; set JmxListen to the address to use otherwise).
    public_host = socket.getfqdn() if host in ("0.0.0.0", "::") else host
    jolokia = _jolokia_url(monitoring)
    command = [
        java,
        f"-Djava.rmi.server.hostname={public_host}",
        f"-Dcom.sun.management.config.file={config}",
        # A small, light JVM: C1 only (faster start, the source is compiled at each start),
        # the serial collector, a 64 MiB heap.
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Xmx64m",
        str(BRIDGE_SOURCE),
        "--jolokia",
        jolokia,
        "--refresh",
        f"{settings.jmx_refresh_interval:g}",
    ]
    env = {key: value for key, value in os.environ.items() if not key.startswith("PUSHGRID_")}
    monitor_login = _monitor_login(monitoring)
    if monitor_login is not None:
        env["PUSHGRID_JOLOKIA_USERNAME"], env["PUSHGRID_JOLOKIA_PASSWORD"] = monitor_login
    return BridgeLaunch(command, env, jmx_url(public_host, port), jolokia)


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies, even by SIGKILL (Linux prctl)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def run(launch: BridgeLaunch) -> int:
    """Run the bridge in the foreground until it exits; SIGTERM and Ctrl-C stop it too."""
    with subprocess.Popen(launch.command, env=launch.env, preexec_fn=_die_with_parent) as proc:
        previous = signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
        try:
            while True:
                try:
                    return proc.wait()
                except KeyboardInterrupt:
                    proc.terminate()
        finally:
            signal.signal(signal.SIGTERM, previous)


async def run_alongside(launch: BridgeLaunch) -> None:
    """Run the bridge as a child of ``pushgrid up``; stopped when the task is cancelled."""
    # No preexec_fn here: `pushgrid up` runs threads, and forking code after fork is unsafe.
    proc = await asyncio.create_subprocess_exec(*launch.command, env=launch.env)
    try:
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5)
            if proc.returncode is None:
                proc.kill()
