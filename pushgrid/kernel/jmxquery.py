"""Reading JMX with ``jmxquery`` and calling operations through the bridge's client mode.

``jmxquery`` is a Python front for a Java program (``JMXQuery.jar``): every query is one
``java -jar`` run (0.2-0.8 s of JVM start-up). We use its jar and its query syntax, but run the JVM
with :mod:`asyncio` so that a slow or hung query neither blocks the event loop nor outlives its
timeout (``JMXConnection.query`` blocks, and swallows timeouts into an empty answer).

Known limits of the jar, which shape what the bridge serves: CompositeData values come back one
line per key (``attributeKey``) but nested ones lose the outer key; TabularData values are not
printed (only their type); a null item inside a CompositeData sends it into endless recursion (the
bridge leaves null items out). Its ``-p`` argument would put the password on the JVM's command
line, where ``ps`` shows it to every user of the machine: the login goes into a Java *argument
file* instead (``java @file``, read by the launcher itself, so ``/proc/<pid>/cmdline`` shows
only ``@file``), written 0600 in a private 0700 directory and removed when the JVM exits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pushgrid.protocol.exceptions import MonitoringError

#: the JVM bridge (deploy/jmx/Bridge.java): its source is compiled once for short-lived queries
BRIDGE_SOURCE: Final = Path(__file__).resolve().parents[2] / "deploy" / "jmx" / "Bridge.java"
JAVA_HINT: Final = (
    "install a Java 17+ runtime with its JDK tools (Debian/Ubuntu: apt-get install "
    "openjdk-17-jdk-headless) or set JmxJava to the java executable"
)

DEFAULT_TIMEOUT: Final = 15.0
# Short-lived client JVMs: C1 only and the serial collector start fastest.
FAST_START: Final = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class JmxError(MonitoringError):
    """A JMX call failed; ``kind`` is ``unreachable``, ``auth``, ``timeout`` or ``error``."""

    code = "jmx"

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = kind in ("unreachable", "timeout")
        self.message = message


@dataclass(frozen=True, slots=True)
class Reading:
    """One value jmxquery printed: an attribute, or one key of a CompositeData attribute."""

    mbean: str
    attribute: str
    key: str | None
    type: str
    value: Any


def _classify(output: str) -> JmxError:
    text = output.strip()
    lowered = text.lower()
    if "invalid username or password" in lowered or "authentication failed" in lowered:
        return JmxError("auth", "the JMX endpoint refused the credentials")
    if "connection refused" in lowered or "connectexception" in lowered:
        return JmxError("unreachable", "connection refused")
    if "sslhandshakeexception" in lowered or "sslexception" in lowered:
        return JmxError(
            "error",
            "TLS failed (is the bridge's certificate in the truststore? "
            "-J-Djavax.net.ssl.trustStore=...): " + text.splitlines()[-1].strip()[:200],
        )
    if "unknownhost" in lowered or "no route to host" in lowered:
        return JmxError("unreachable", "unknown or unreachable host")
    last = text.splitlines()[-1] if text else "no output"
    return JmxError("error", last[:300])


async def _run_java(
    command: Sequence[str], seconds: float, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
    except FileNotFoundError:
        raise JmxError("error", f"java not found ({command[0]!r}): {JAVA_HINT}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), seconds)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise JmxError("timeout", f"no answer within {seconds:g} s") from None
    except asyncio.CancelledError:  # the caller gave up: the JVM must not outlive it
        proc.kill()
        await proc.wait()
        raise
    return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def argument_file_text(arguments: Sequence[str]) -> str:
    """``arguments`` as a Java launcher argument file: one double-quoted argument per line
    (inside quotes ``\\`` and ``\"`` escape, and ``\n``, ``\r``, ``\t`` stand for themselves)."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}
    lines = ['"' + "".join(escapes.get(char, char) for char in arg) + '"' for arg in arguments]
    return "\n".join(lines) + "\n"


@contextmanager
def private_argument_file(arguments: Sequence[str]) -> Iterator[Path]:
    """A Java argument file holding ``arguments`` (credentials included): mode 0600 in a 0700
    directory of the per-user runtime directory (tmpfs) or the temporary directory, whatever the
    umask; removed on exit."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = runtime if runtime and os.path.isdir(runtime) else None
    directory = Path(tempfile.mkdtemp(prefix="pushgrid-jmx-", dir=base))  # 0700
    path = directory / "args"
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(argument_file_text(arguments))
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _readings(output: str) -> list[Reading]:
    try:
        rows = json.loads(output)
    except ValueError:
        raise JmxError("error", "jmxquery printed something that is not JSON") from None
    if not isinstance(rows, list):
        raise JmxError("error", "jmxquery printed an unexpected answer")
    return [
        Reading(
            mbean=str(row.get("mBeanName", "")),
            attribute=str(row.get("attribute", "")),
            key=row.get("attributeKey"),
            type=str(row.get("attributeType", "")),
            value=row.get("value"),
        )
        for row in rows
        if isinstance(row, dict)
    ]


async def query(
    url: str,
    patterns: Sequence[str],
    username: str | None = None,
    password: str | None = None,
    *,
    java: str = "java",
    java_options: Sequence[str] = (),
    seconds: float = DEFAULT_TIMEOUT,
) -> list[Reading]:
    """Every attribute of the MBeans matching ``patterns``, in ONE JVM run of jmxquery's jar.

    A pattern may name an attribute (``pushgrid:type=Server/Uptime``); attributes that cannot be
    read are left out by the jar, an unreachable or refusing endpoint raises :class:`JmxError`.
    ``java_options`` go to the JVM (``-Djavax.net.ssl.trustStore=...`` for a TLS bridge).
    """
    import jmxquery  # the [admin] extra: only a query needs it, `pushgrid --help` must not

    arguments = [*FAST_START, *java_options, "-jar", jmxquery.JAR_PATH, "-url", url, "-json"]
    if username is not None:
        arguments += ["-u", username, "-p", password or ""]
    queries = ";".join(jmxquery.JMXQuery(pattern).to_query_string() for pattern in patterns)
    arguments += ["-q", queries + ";"]
    with private_argument_file(arguments) as argfile:
        code, out, err = await _run_java([java, f"@{argfile}"], seconds)
    if code != 0 or not out.lstrip().startswith("["):
        raise _classify(err + "\n" + out)
    return _readings(out)


_compile_lock = asyncio.Lock()


def _cache_dir() -> Path:
    digest = hashlib.sha256(BRIDGE_SOURCE.read_bytes()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pushgrid" / f"jmx-bridge-{digest}"


def _javac_next_to(java: str) -> Path | None:
    found = shutil.which(java)
    javac = Path(found).resolve().with_name("javac") if found else None
    return javac if javac is not None and javac.is_file() else None


async def compiled_bridge(java: str) -> Path | None:
    """Bridge.java compiled once into a private per-user cache (keyed by the source's hash).

    The source launcher compiles on every run (1-3 s); the compiled classes start in ~0.3 s.
    Without ``javac`` next to ``java`` (or when compiling fails), None: run the source.
    """
    async with _compile_lock:
        target = _cache_dir()
        if (target / "Bridge.class").is_file():
            return target
        javac = _javac_next_to(java)
        if javac is None:
            return None
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            building = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
            command = [str(javac), "-d", str(building), str(BRIDGE_SOURCE)]
            code, _out, _err = await _run_java(command, 120.0)
            if code != 0:
                shutil.rmtree(building, ignore_errors=True)
                return None
            os.replace(building, target)  # atomic: another process may have won the race
        except OSError:
            return None if not (target / "Bridge.class").is_file() else target
        return target


def nest(readings: Sequence[Reading]) -> dict[str, dict[str, Any]]:
    """Readings as ``{mbean: {attribute: value or {key: value}}}`` (what ``jmx query`` prints)."""
    out: dict[str, dict[str, Any]] = {}
    for reading in readings:
        attributes = out.setdefault(reading.mbean, {})
        if reading.key is None:
            attributes[reading.attribute] = reading.value
        else:
            entry = attributes.get(reading.attribute)
            if not isinstance(entry, dict):
                entry = attributes[reading.attribute] = {}
            entry[reading.key] = reading.value
    return out


async def invoke(
    url: str,
    mbean: str,
    operation: str,
    arguments: Sequence[Any],
    username: str | None = None,
    password: str | None = None,
    *,
    java: str = "java",
    seconds: float = DEFAULT_TIMEOUT,
) -> Any:
    """Call an operation over JMX (jmxquery cannot): the bridge's client mode (~0.5 s compiled).

    The credentials travel in the child's environment. List and map results, which the bridge
    returns as JSON text, come back decoded.
    """
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if username is not None:
        env["PUSHGRID_JMX_USERNAME"] = username
        env["PUSHGRID_JMX_PASSWORD"] = password or ""
    args = [str(a).lower() if isinstance(a, bool) else str(a) for a in arguments]
    classes = await compiled_bridge(java)
    program = ["-cp", str(classes), "Bridge"] if classes else [str(BRIDGE_SOURCE)]
    command = [java, *FAST_START, *program, "invoke", url, mbean, operation]
    _code, out, err = await _run_java([*command, *args], seconds, env)
    try:
        answer = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise _classify(err + "\n" + out)
    if "error" in answer:
        message = f"{answer.get('error_type', 'error')}: {answer['error']}"
        error = _classify(message)
        raise error if error.kind != "error" else JmxError("error", message)
    return answer.get("value")
