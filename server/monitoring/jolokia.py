"""The Jolokia protocol (JSON over HTTP, protocol 7.2) over an :class:`MBeanRegistry`, sans I/O.

Wire it into any HTTP server under a base path (conventionally ``/jolokia``):

* ``GET <base><path>?<query>`` -> ``agent.handle_get(path, params)`` where ``path`` is the raw
  (still percent-encoded) request path after the base, e.g. ``/read/pushgrid:type=Server/Uptime``.
* ``POST <base><path>`` -> ``agent.handle_post(body, path, params)``.
* or simply ``agent.handle_http(method, path, query, body)`` for both (and the ``?p=`` form).

Each returns ``(http_status, json_bytes)``; serve the bytes with :func:`content_type`. Request
types: ``read``, ``exec``, ``search``, ``list``, ``version`` (``write`` is refused with 403).
Per-request failures travel inside an HTTP 200 as ``{"status", "error", "error_type",
"request", "timestamp"}``; only an unreadable POST body gets an HTTP 400.

Bounds (:class:`JolokiaLimits`, docs/security.md): ``exec`` and ``write`` need a POST (a GET
answers 405: a link or an image must not run an operation); a bulk POST holds at most
``max_bulk_requests`` requests (HTTP 413 otherwise, one Jolokia error); an answer grows to at most
``max_answer_bytes``: the answers past that point are replaced by Jolokia errors with status 413,
so a bulk keeps one answer per request. The ``list`` tree is built once per set of MBeans.

Inside GET path segments ``!/`` stands for ``/``, ``!!`` for ``!`` and ``!x`` for ``x``; ``[null]``
and ``""`` are the null and empty-string tags for exec arguments.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote

import msgspec

from pushgrid.protocol.exceptions import MonitoringError

from .mbeans import MalformedObjectName, MBean, MBeanRegistry, ObjectName, Operation, one_read

__all__ = [
    "PROTOCOL_VERSION",
    "JolokiaAgent",
    "JolokiaError",
    "JolokiaLimits",
    "content_type",
    "convert_argument",
    "escape_segment",
    "navigate",
    "split_path",
    "to_json_value",
]

PROTOCOL_VERSION = "7.2"
AGENT_VERSION = "2.0.0"

BAD_REQUEST = "java.lang.IllegalArgumentException"
MALFORMED_NAME = "javax.management.MalformedObjectNameException"
NO_INSTANCE = "javax.management.InstanceNotFoundException"
NO_ATTRIBUTE = "javax.management.AttributeNotFoundException"
NO_OPERATION = "java.lang.NoSuchMethodException"
FORBIDDEN = "java.lang.SecurityException"
UNSUPPORTED = "java.lang.UnsupportedOperationException"
RUNTIME = "java.lang.RuntimeException"

_encoder = msgspec.json.Encoder()

#: request types a GET may not carry: they change something (Jolokia's own policy files allow
#: the same restriction, ``<http><method>post</method></http>``)
POST_ONLY = frozenset({"exec", "write"})


@dataclasses.dataclass(frozen=True, slots=True)
class JolokiaLimits:
    """What one HTTP request may cost (JolokiaMaxBulkRequests, JolokiaMaxAnswerBytes)."""

    max_bulk_requests: int = 100
    max_answer_bytes: int = 32 * 1024 * 1024


TOO_LARGE = 413


class JolokiaError(MonitoringError):
    """A failed Jolokia request: ``status`` (400/403/404/500) and a Java-style ``error_type``."""

    code = "jolokia"

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


class PathNotFound(JolokiaError):
    def __init__(self, message: str) -> None:
        super().__init__(404, NO_ATTRIBUTE, message)


# --------------------------------------------------------------------------- escaping and paths


def split_path(text: str) -> list[str]:
    """Split on ``/`` honouring Jolokia escapes (``!/`` -> ``/``, ``!!`` -> ``!``, ``!x`` -> x)."""
    segments: list[str] = []
    current: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "!" and index + 1 < len(text):
            current.append(text[index + 1])
            index += 2
            continue
        if char == "/":
            segments.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    segments.append("".join(current))
    return segments


def escape_segment(segment: str) -> str:
    """The inverse of :func:`split_path` for one segment."""
    return segment.replace("!", "!!").replace("/", "!/")


def _path_segments(path: Any) -> list[str]:
    """A request's ``path`` (None, escaped string or list of segments) as segments."""
    if path is None or path == "":
        return []
    if isinstance(path, list):
        return [str(part) for part in path]
    if isinstance(path, str):
        return [part for part in split_path(path) if part != ""]
    raise JolokiaError(400, BAD_REQUEST, f"path must be a string or a list, not {path!r}")


def _join_path(segments: Sequence[str]) -> str | None:
    return "/".join(escape_segment(part) for part in segments) if segments else None


def navigate(value: Any, segments: Sequence[str]) -> Any:
    """Follow an inner path into a JSON value; ``*`` matches every entry at its level.

    Entries under a ``*`` that do not contain the rest of the path are dropped (filtering).
    """
    if not segments:
        return value
    head, rest = segments[0], segments[1:]
    if head == "*":
        return _navigate_wildcard(value, rest)
    return navigate(_child(value, head), rest)


def _child(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        if key in value:
            return value[key]
    elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
        return value[int(key)]
    raise PathNotFound(f"no value at path element {key!r}")


def _navigate_wildcard(value: Any, rest: Sequence[str]) -> Any:
    if isinstance(value, dict):
        found = {key: _try_navigate(item, rest) for key, item in value.items()}
        return {key: item for key, item in found.items() if item is not _MISSING}
    if isinstance(value, list):
        return [item for item in (_try_navigate(v, rest) for v in value) if item is not _MISSING]
    if rest:
        raise PathNotFound("wildcard path element on a simple value")
    return value


_MISSING = object()


def _try_navigate(value: Any, rest: Sequence[str]) -> Any:
    try:
        result = navigate(value, rest)
    except PathNotFound:
        return _MISSING
    if rest and isinstance(result, dict | list) and not result:
        return _MISSING
    return result


# --------------------------------------------------------------------------- values


def to_json_value(value: Any) -> Any:
    """Convert a Python value into plain JSON data (NaN and infinities become null)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, ObjectName):
        return {"objectName": value.canonical}
    if isinstance(value, Mapping):
        return {_json_key(key): to_json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(item) for item in value]
    if isinstance(value, set | frozenset):
        return [to_json_value(item) for item in sorted(value, key=repr)]
    return _to_json_other(value)


def _to_json_other(value: Any) -> Any:
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return {f.name: to_json_value(getattr(value, f.name)) for f in fields}
    try:
        return to_json_value(msgspec.to_builtins(value, str_keys=True))
    except (TypeError, ValueError):
        return str(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        return key.name
    return str(key)


_INTEGER_TYPES = frozenset(
    [
        *("int", "long", "short", "byte"),
        *("java.lang.Integer", "java.lang.Long", "java.lang.Short", "java.lang.Byte"),
        "java.math.BigInteger",
    ]
)
_FLOAT_TYPES = frozenset(
    ["double", "float", "java.lang.Double", "java.lang.Float", "java.math.BigDecimal"]
)
_BOOLEAN_TYPES = frozenset(["boolean", "java.lang.Boolean"])
_STRING_TYPES = frozenset(["java.lang.String", "String", "string", "char", "java.lang.Character"])
_PRIMITIVES = frozenset(["int", "long", "short", "byte", "double", "float", "boolean", "char"])


def convert_argument(value: Any, java_type: str) -> Any:
    """Convert a JSON or GET-string argument to the declared Java-like type.

    Raises ``ValueError`` when the value does not fit the type.
    """
    if value is None:
        if java_type in _PRIMITIVES:
            raise ValueError(f"null is not a valid {java_type}")
        return None
    element_type = _array_element_type(java_type)
    if element_type is not None:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ValueError(f"{value!r} is not an array")
        return [convert_argument(item, element_type) for item in items]
    return _convert_scalar(value, java_type)


def _array_element_type(java_type: str) -> str | None:
    if java_type.endswith("[]"):
        return java_type[:-2]
    if java_type in ("java.util.List", "java.util.Collection", "java.util.Set"):
        return "java.lang.Object"
    primitive_arrays = {"[I": "int", "[J": "long", "[D": "double", "[Z": "boolean", "[F": "float"}
    if java_type in primitive_arrays:
        return primitive_arrays[java_type]
    if java_type.startswith("[L") and java_type.endswith(";"):
        return java_type[2:-1]
    return None


def _convert_scalar(value: Any, java_type: str) -> Any:
    if java_type in _INTEGER_TYPES:
        return _to_int(value)
    if java_type in _FLOAT_TYPES:
        return _to_float(value)
    if java_type in _BOOLEAN_TYPES:
        return _to_bool(value)
    if java_type in _STRING_TYPES:
        return _to_str(value)
    if java_type == "java.util.Map" and not isinstance(value, dict):
        raise ValueError(f"{value!r} is not a map")
    return value


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise ValueError(f"{value!r} is not an integer")


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return float(value.strip())
    raise ValueError(f"{value!r} is not a number")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{value!r} is not a boolean")


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise ValueError(f"{value!r} is not a string")


# --------------------------------------------------------------------------- request parsing


def _attribute_names(attribute: Any) -> tuple[list[str], bool]:
    """``(names, multi)``: no names means all attributes (a map); ``multi`` also answers a map."""
    if attribute is None:
        return [], True
    if isinstance(attribute, str):
        names = [name.replace("\\,", ",") for name in re.split(r"(?<!\\),", attribute)]
        return names, len(names) > 1
    if isinstance(attribute, list):
        if attribute == [None]:
            return [], True
        if not all(isinstance(name, str) for name in attribute):
            raise JolokiaError(400, BAD_REQUEST, "attribute names must be strings")
        return list(attribute), True
    raise JolokiaError(400, BAD_REQUEST, "attribute must be a string, a list or null")


def _split_signature(operation: str) -> str:
    """``disconnect(java.lang.String)`` -> ``disconnect`` (operations are not overloaded)."""
    return operation.split("(", 1)[0].strip()


def _get_tag(argument: str) -> str | None:
    if argument == "[null]":
        return None
    if argument == '""':
        return ""
    return argument


def _request_from_segments(segments: list[str]) -> dict[str, Any]:
    """Build the POST-style request a GET path stands for."""
    kind = segments[0].lower() if segments and segments[0] else "version"
    args = segments[1:]
    request: dict[str, Any] = {"type": kind}
    if kind in ("read", "write", "exec", "search") and args:
        request["mbean"] = args[0]
    if kind == "read":
        if len(args) > 1 and args[1]:
            names, multi = _attribute_names(args[1])
            request["attribute"] = names if multi else args[1]
        if (path := _join_path(args[2:])) is not None:
            request["path"] = path
    elif kind == "write":
        request.update(zip(("attribute", "value"), args[1:3], strict=False))
    elif kind == "exec":
        if len(args) > 1:
            request["operation"] = args[1]
        request["arguments"] = [_get_tag(argument) for argument in args[2:]]
    elif kind == "list" and (path := _join_path([a for a in args if a])) is not None:
        request["path"] = path
    return request


def _flag(config: Mapping[str, Any], key: str, default: bool = False) -> bool:
    value = config.get(key, default)
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _positive_int(config: Mapping[str, Any], key: str) -> int | None:
    value = config.get(key)
    try:
        number = int(value) if value is not None else 0
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _truncate(value: Any, depth: int) -> Any:
    """Cut a list tree at ``depth`` levels; cut-off subtrees become the dummy value 1."""
    if not isinstance(value, dict):
        return value
    if depth <= 0:
        return 1
    return {key: _truncate(item, depth - 1) for key, item in value.items()}


def content_type(params: Mapping[str, str] | None = None) -> str:
    """The Content-Type to serve answers with (``?mimeType=application/json`` as in Jolokia)."""
    if params and params.get("mimeType") == "application/json":
        return "application/json"
    return "text/plain; charset=utf-8"


# --------------------------------------------------------------------------- the agent


class JolokiaAgent:
    """Answers Jolokia requests from an :class:`MBeanRegistry`.

    ``allow_exec=False`` refuses every ``exec`` request with 403 (read-only monitoring);
    ``get_refused`` names the request types a GET may not carry (:data:`POST_ONLY`; an empty
    set allows the whole URL form, as plain Jolokia agents do).
    MBean getters and operations run synchronously on the calling thread; an operation that
    needs async work should schedule it and return.
    """

    def __init__(
        self,
        registry: MBeanRegistry,
        agent_id: str,
        version: str,
        *,
        product: str = "pushgrid",
        vendor: str = "pushgrid",
        agent_version: str = AGENT_VERSION,
        allow_exec: bool = True,
        extra_info: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        limits: JolokiaLimits | None = None,
        get_refused: frozenset[str] = POST_ONLY,
    ) -> None:
        self.registry = registry
        self.limits = limits or JolokiaLimits()
        self.get_refused = get_refused
        self._list_cache: tuple[int, dict[str, dict[str, Any]]] | None = None
        self.agent_id = agent_id
        self.version = version
        self.product = product
        self.vendor = vendor
        self.agent_version = agent_version
        self.allow_exec = allow_exec
        self.extra_info = dict(extra_info or {})
        self._clock = clock
        self._handlers: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]] = {
            "read": self._read,
            "exec": self._exec,
            "search": self._search,
            "list": self._list,
            "version": self._version,
            "write": self._write,
        }

    # ----------------------------------------------------------------- HTTP entry points

    def handle_http(
        self, method: str, path: str, query: str = "", body: bytes = b""
    ) -> tuple[int, bytes]:
        """Dispatch one HTTP request (HEAD is answered like GET; drop the body yourself).

        ``path`` is the raw path after the base URL, ``query`` the raw query string: its
        processing parameters (``ignoreErrors``, ``maxDepth``, ``includeRequest``, ``mimeType``)
        apply to every request, and ``?p=<path>`` replaces the path as in Jolokia.
        """
        params = dict(parse_qsl(query, keep_blank_values=True))
        if method.upper() in ("GET", "HEAD"):
            if "p" in params:
                return self._get(params.pop("p"), params)
            return self.handle_get(path, params)
        if method.upper() == "POST":
            return self.handle_post(body, path, params)
        return 405, self._encode(self._failure(405, UNSUPPORTED, f"method {method} not allowed"))

    def handle_get(self, path: str, params: Mapping[str, str] | None = None) -> tuple[int, bytes]:
        """A GET request: ``path`` is the path after the base URL, percent-decoded here.

        Passing an already-decoded path works too, unless a name holds a literal ``%XX``.
        """
        return self._get(unquote(path), params or {})

    def handle_post(
        self, body: bytes, path: str = "", params: Mapping[str, str] | None = None
    ) -> tuple[int, bytes]:
        """A POST: one JSON request object, or an array of them (bulk, answered in order)."""
        try:
            payload = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            return 400, self._encode(self._failure(400, BAD_REQUEST, f"invalid JSON: {exc}"))
        defaults: dict[str, Any] = dict(params or {})
        segments = [part for part in split_path(unquote(path)) if part]
        default_type = segments[0].lower() if segments else None
        if isinstance(payload, list):
            limit = self.limits.max_bulk_requests
            if len(payload) > limit:
                message = (
                    f"a bulk request of {len(payload)} requests: at most {limit} per POST "
                    "(JolokiaMaxBulkRequests); split it"
                )
                return TOO_LARGE, self._encode(self._failure(TOO_LARGE, BAD_REQUEST, message))
            return 200, self._bulk(payload, defaults, default_type)
        if isinstance(payload, dict):
            return 200, self._bounded(self._answer(payload, defaults, default_type), 0)
        message = "a Jolokia POST body must be a JSON object or array"
        return 400, self._encode(self._failure(400, BAD_REQUEST, message))

    def process(self, request: Any, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Answer one decoded request object (no HTTP); the building block of the above."""
        return self._answer(request, config or {}, None)

    # ----------------------------------------------------------------- plumbing

    def _get(self, path: str, params: Mapping[str, str]) -> tuple[int, bytes]:
        segments = split_path(path.lstrip("/"))
        if segments and segments[-1] == "":
            segments.pop()
        request = _request_from_segments(segments)
        if request["type"] in self.get_refused:
            message = f"{request['type']} requests need a POST with a JSON body, not a GET"
            return 405, self._encode(self._failure(405, FORBIDDEN, message))
        return 200, self._bounded(self._answer(request, dict(params), None), 0)

    def _bulk(
        self, payload: list[Any], defaults: Mapping[str, Any], default_type: str | None
    ) -> bytes:
        """The bulk answer, encoded item by item so that it stops growing at the answer cap."""
        parts: list[bytes] = []
        size = 2
        for item in payload:
            encoded = self._bounded(self._answer(item, defaults, default_type), size)
            size += len(encoded) + 1
            parts.append(encoded)
        return b"[" + b",".join(parts) + b"]"

    def _bounded(self, answer: dict[str, Any], used: int) -> bytes:
        """``answer`` encoded, or a 413 Jolokia error when it would take the HTTP answer (of
        which ``used`` bytes are already taken) past JolokiaMaxAnswerBytes."""
        encoded = self._encode(answer)
        limit = self.limits.max_answer_bytes
        if used + len(encoded) <= limit:
            return encoded
        message = (
            f"the answer would exceed {limit} bytes (JolokiaMaxAnswerBytes): read fewer "
            "MBeans or attributes per request, or fewer requests per bulk"
        )
        failure = self._failure(TOO_LARGE, UNSUPPORTED, message)
        if "request" in answer:
            failure["request"] = answer["request"]
        return self._encode(failure)

    def _answer(
        self, request: Any, defaults: Mapping[str, Any], default_type: str | None
    ) -> dict[str, Any]:
        if not isinstance(request, dict):
            failure = self._failure(400, BAD_REQUEST, "a request must be a JSON object")
            return {**failure, "request": request}
        own_config = request.get("config")
        config = {**defaults, **(own_config if isinstance(own_config, dict) else {})}
        kind = request.get("type") or default_type
        try:
            value = self._dispatch(kind, request, config)
        except JolokiaError as exc:
            answer = self._failure(exc.status, exc.error_type, exc.message)
        except Exception as exc:  # an MBean's own failure, reported like Jolokia does
            answer = self._failure(500, _error_type(exc), _error_text(exc))
        else:
            answer = {"value": value, "status": 200, "timestamp": self._now()}
        if _flag(config, "includeRequest", True):
            answer["request"] = request
        return answer

    def _dispatch(self, kind: Any, request: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        if not isinstance(kind, str) or not kind:
            raise JolokiaError(400, BAD_REQUEST, "the request has no type")
        handler = self._handlers.get(kind.lower())
        if handler is None:
            raise JolokiaError(400, BAD_REQUEST, f"unsupported request type {kind!r}")
        return handler(request, config)

    def _failure(self, status: int, error_type: str, message: str) -> dict[str, Any]:
        return {
            "status": status,
            "error_type": error_type,
            "error": f"{error_type} : {message}",
            "timestamp": self._now(),
        }

    def _now(self) -> int:
        return int(self._clock())

    @staticmethod
    def _encode(payload: Any) -> bytes:
        return _encoder.encode(payload)

    # ----------------------------------------------------------------- lookups

    @staticmethod
    def _object_name(request: Mapping[str, Any]) -> ObjectName:
        text = request.get("mbean")
        if not isinstance(text, str) or not text:
            raise JolokiaError(400, BAD_REQUEST, "the request needs an mbean name")
        try:
            return ObjectName.parse(text)
        except MalformedObjectName as exc:
            raise JolokiaError(400, MALFORMED_NAME, str(exc)) from exc

    def _mbean(self, name: ObjectName) -> MBean:
        mbean = self.registry.get(name)
        if mbean is None:
            raise JolokiaError(404, NO_INSTANCE, name.canonical)
        return mbean

    def _fault(self, exc: Exception, config: Mapping[str, Any]) -> Any:
        """With ``ignoreErrors`` a failed attribute becomes an error string; else it fails."""
        if not _flag(config, "ignoreErrors"):
            raise exc
        if isinstance(exc, JolokiaError):
            return f"ERROR: {exc.message} ({exc.error_type})"
        return f"ERROR: {_error_text(exc)} ({_error_type(exc)})"

    # ----------------------------------------------------------------- read

    def _read(self, request: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        name = self._object_name(request)
        names, multi = _attribute_names(request.get("attribute"))
        path = _path_segments(request.get("path"))
        if name.is_pattern:
            value: Any = self._read_pattern(name, names, config)
        elif multi:
            value = self._read_many(self._mbean(name), names, config, strict=True)
        else:
            value = self._read_one(self._mbean(name), names[0])
        return navigate(value, path)

    @staticmethod
    def _read_one(mbean: MBean, attribute_name: str) -> Any:
        attribute = mbean.attribute(attribute_name)
        if attribute is None:
            message = f"no attribute {attribute_name!r} on {mbean.object_name.canonical}"
            raise JolokiaError(404, NO_ATTRIBUTE, message)
        return to_json_value(attribute.getter())

    def _read_many(
        self, mbean: MBean, names: list[str], config: Mapping[str, Any], *, strict: bool
    ) -> dict[str, Any]:
        wanted = names or [attribute.name for attribute in mbean.attributes]
        if not strict:
            wanted = [name for name in wanted if mbean.attribute(name) is not None]
        values: dict[str, Any] = {}
        with one_read():  # one moment per document, however many of its attributes are asked
            for attribute_name in wanted:
                try:
                    values[attribute_name] = self._read_one(mbean, attribute_name)
                except Exception as exc:
                    values[attribute_name] = self._fault(exc, config)
        return values

    def _read_pattern(
        self, pattern: ObjectName, names: list[str], config: Mapping[str, Any]
    ) -> dict[str, Any]:
        beans = self.registry.match(pattern)
        if not beans:
            raise JolokiaError(404, NO_INSTANCE, f"no MBean matches {pattern.canonical}")
        result: dict[str, Any] = {}
        for mbean in beans:
            values = self._read_many(mbean, names, config, strict=False)
            if values:
                result[mbean.object_name.canonical] = values
        if not result:
            message = f"no attribute {names} on any MBean matching {pattern.canonical}"
            raise JolokiaError(404, NO_ATTRIBUTE, message)
        return result

    # ----------------------------------------------------------------- exec

    def _exec(self, request: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        if not self.allow_exec:
            raise JolokiaError(403, FORBIDDEN, "exec requests are not allowed by this agent")
        name = self._object_name(request)
        if name.is_pattern:
            raise JolokiaError(400, BAD_REQUEST, "exec needs a single MBean, not a pattern")
        mbean = self._mbean(name)
        operation = self._operation(mbean, request.get("operation"))
        arguments = self._arguments(operation, request.get("arguments"))
        result = operation.call(*arguments)
        if inspect.isawaitable(result):
            _discard(result)
            raise JolokiaError(500, RUNTIME, f"operation {operation.name} is not synchronous")
        return navigate(to_json_value(result), _path_segments(request.get("path")))

    @staticmethod
    def _operation(mbean: MBean, operation_name: Any) -> Operation:
        if not isinstance(operation_name, str) or not operation_name:
            raise JolokiaError(400, BAD_REQUEST, "exec needs an operation name")
        operation = mbean.operation(_split_signature(operation_name))
        if operation is None:
            message = f"no operation {operation_name!r} on {mbean.object_name.canonical}"
            raise JolokiaError(404, NO_OPERATION, message)
        return operation

    @staticmethod
    def _arguments(operation: Operation, raw: Any) -> list[Any]:
        values = [] if raw is None else raw if isinstance(raw, list) else [raw]
        signature = operation.signature
        if len(values) != len(signature):
            message = (
                f"operation {operation.name} takes {len(signature)} argument(s), "
                f"{len(values)} given"
            )
            raise JolokiaError(400, BAD_REQUEST, message)
        converted: list[Any] = []
        for value, arg in zip(values, signature, strict=True):
            try:
                converted.append(convert_argument(value, arg.type))
            except (TypeError, ValueError) as exc:
                message = f"argument {arg.name!r} of {operation.name}: {exc}"
                raise JolokiaError(400, BAD_REQUEST, message) from exc
        return converted

    # ----------------------------------------------------------------- search, list, version

    def _search(self, request: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
        pattern = self._object_name(request)
        return [mbean.object_name.canonical for mbean in self.registry.match(pattern)]

    def _list(self, request: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        segments = _path_segments(request.get("path"))
        tree = self._list_tree()
        if len(segments) >= 2 and segments[1] != "*":
            segments[1] = _canonical_properties(segments[0], segments[1])
        try:
            value = navigate(tree, segments)
        except PathNotFound as exc:
            raise JolokiaError(404, NO_INSTANCE, f"nothing at list path {segments}") from exc
        depth = _positive_int(config, "maxDepth")
        return value if depth is None else _truncate(value, depth)

    def _list_tree(self) -> dict[str, dict[str, Any]]:
        """Built once per set of registered MBeans (the registry's generation); never mutated:
        ``list`` answers are read-only views into it."""
        generation = self.registry.generation
        cached = self._list_cache
        if cached is not None and cached[0] == generation:
            return cached[1]
        tree: dict[str, dict[str, Any]] = {}
        for mbean in self.registry:
            name = mbean.object_name
            tree.setdefault(name.domain, {})[name.key_property_list] = _describe(mbean)
        self._list_cache = (generation, tree)
        return tree

    def _version(self, request: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {
            "product": self.product,
            "vendor": self.vendor,
            "version": self.version,
        }
        if self.extra_info:
            info["extraInfo"] = to_json_value(self.extra_info)
        return {
            "agent": self.agent_version,
            "protocol": PROTOCOL_VERSION,
            "id": self.agent_id,
            "config": {"agentId": self.agent_id, "agentType": self.product},
            "info": info,
            "details": {
                "agent_id": self.agent_id,
                "agent_version": self.agent_version,
                "server_product": self.product,
                "server_vendor": self.vendor,
                "server_version": self.version,
            },
        }

    def _write(self, request: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        raise JolokiaError(403, FORBIDDEN, "attributes are read-only; write is not allowed")


# --------------------------------------------------------------------------- helpers


def _describe(mbean: MBean) -> dict[str, Any]:
    """The ``list`` entry of one MBean: ``desc``, ``attr`` and ``op``."""
    attributes = {
        attribute.name: {"type": attribute.type, "desc": attribute.description, "rw": False}
        for attribute in mbean.attributes
    }
    operations = {
        operation.name: {
            "args": [
                {"name": arg.name, "type": arg.type, "desc": arg.description}
                for arg in operation.signature
            ],
            "ret": operation.ret,
            "desc": operation.description,
        }
        for operation in mbean.operations
    }
    return {"desc": mbean.description, "attr": attributes, "op": operations}


def _canonical_properties(domain: str, properties: str) -> str:
    """A list path's key property segment in canonical order (``b=2,a=1`` -> ``a=1,b=2``)."""
    try:
        return ObjectName.parse(f"{domain}:{properties}").key_property_list
    except MalformedObjectName:
        return properties


def _error_type(exc: BaseException) -> str:
    return type(exc).__qualname__


def _error_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__qualname__


def _discard(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()
