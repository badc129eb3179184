"""The Jolokia agent (server.monitoring.jolokia) over the MBean registry (server.monitoring.mbeans).

Request bodies marked "exact bytes" are what the PyPI ``jolokia`` (JolokiaClient 0.4.0) and
``pyjolokia`` (0.3.1) clients POST, captured from their code with the transport stubbed out, and
what Telegraf's jolokia2 input marshals (Go ``encoding/json``, ``omitempty`` on attribute/path).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import pytest

from pushgrid.ops.attributes import java
from pushgrid.server.monitoring.jolokia import (
    PROTOCOL_VERSION,
    JolokiaAgent,
    JolokiaLimits,
    PathNotFound,
    content_type,
    convert_argument,
    escape_segment,
    navigate,
    split_path,
    to_json_value,
)
from pushgrid.server.monitoring.mbeans import (
    Attribute,
    InstanceAlreadyExists,
    MalformedObjectName,
    MBean,
    MBeanRegistry,
    ObjectName,
    Operation,
    document_attributes,
)

NOW = 1_700_000_000.75


class Color(enum.Enum):
    RED = 1


@dataclasses.dataclass
class Point:
    x: int
    y: float


def _boom() -> int:
    raise RuntimeError("getter exploded")


async def _async_op() -> None:
    return None


class Fixture:
    """Three example MBeans plus a record of what the operations were called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.registry = MBeanRegistry()
        self.registry.register(self._server())
        self.registry.register(self._sessions())
        for name, published in (("orders", 10), ("trades", 20), ("eu/west", 30)):
            self.registry.register(self._stats(name, published))

    def _record(self, name: str, result: Any) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            self.calls.append((name, args))
            return result(*args) if callable(result) else result

        return call

    def _server(self) -> MBean:
        info = {"host": "h1", "ports": [8080, 8081], "nested": {"a": {"b": 1}}, "k/v": 7}
        return MBean(
            "pushgrid:type=Server",
            "The push server",
            [
                Attribute("Uptime", "long", "Seconds since start", lambda: 42),
                Attribute("Version", "java.lang.String", "Server version", lambda: "1.2.3"),
                Attribute("Load", "double", "Not yet measured", lambda: math.nan),
                Attribute("Info", "java.util.Map", "Host and ports", lambda: info),
                Attribute("Broken", "long", "Always fails", _boom),
            ],
            [
                Operation("gc", [], "void", "Collect garbage", self._record("gc", None)),
                Operation(
                    "add",
                    [("a", "int", "first"), ("b", "long", "second")],
                    "long",
                    "Sum of two numbers",
                    self._record("add", lambda a, b: a + b),
                ),
                Operation(
                    "scale",
                    [("x", "double", ""), ("twice", "boolean", "")],
                    "double",
                    "x or 2x",
                    self._record("scale", lambda x, twice: x * 2 if twice else x),
                ),
                Operation(
                    "echo",
                    [("text", "java.lang.String", "")],
                    "java.lang.String",
                    "Returns its argument",
                    self._record("echo", lambda text: text),
                ),
                Operation("later", [], "void", "Async by mistake", _async_op),
            ],
        )

    def _sessions(self) -> MBean:
        return MBean(
            ObjectName.of("pushgrid", type="Sessions"),
            "Connected sessions",
            [Attribute("Count", "int", "Open sessions", lambda: 3)],
            [
                Operation(
                    "disconnect",
                    [("id", "java.lang.String", "Session id")],
                    "boolean",
                    "Close one session",
                    self._record("disconnect", lambda session_id: session_id == "abc"),
                ),
                Operation("ids", [], "java.util.List", "Session ids", lambda: ("abc", "def")),
            ],
        )

    @staticmethod
    def _stats(name: str, published: int) -> MBean:
        return MBean(
            ObjectName.of("pushgrid", name=name, type="Stats"),
            f"Statistics of {name}",
            [
                Attribute("Published", "long", "Messages published", lambda: published),
                Attribute("Rate", "double", "Messages per second", lambda: published / 10),
            ],
        )


@pytest.fixture
def fixture() -> Fixture:
    return Fixture()


@pytest.fixture
def agent(fixture: Fixture) -> JolokiaAgent:
    """An agent that also takes ``exec`` in the GET URL form (``get_refused`` empty), so the
    URL form's parsing stays tested; the server's agent refuses it (test_get_exec_refused...)."""
    return JolokiaAgent(
        fixture.registry, "pushgrid-test-1", "0.1.0", clock=lambda: NOW, get_refused=frozenset()
    )


def decode(payload: bytes) -> Any:
    # msgspec refuses NaN / Infinity, so this also proves the output is strict JSON.
    return msgspec.json.decode(payload)


def get(agent: JolokiaAgent, path: str, params: dict[str, str] | None = None) -> Any:
    status, payload = agent.handle_get(path, params)
    assert status == 200
    return decode(payload)


def post(agent: JolokiaAgent, body: bytes | Any, path: str = "") -> Any:
    raw = body if isinstance(body, bytes) else msgspec.json.encode(body)
    status, payload = agent.handle_post(raw, path)
    assert status == 200
    return decode(payload)


def value(answer: Any) -> Any:
    assert answer["status"] == 200, answer
    return answer["value"]


# ------------------------------------------------------------------------------- ObjectName


def test_canonical_name_sorts_keys() -> None:
    name = ObjectName.parse("pushgrid:type=Stats,name=orders")
    assert str(name) == "pushgrid:name=orders,type=Stats"
    assert name == ObjectName.parse("pushgrid:name=orders,type=Stats")
    assert name.key_property_list == "name=orders,type=Stats"
    assert name.get("type") == "Stats"
    assert name.get("missing") is None
    assert not name.is_pattern


@pytest.mark.parametrize(
    "text",
    [
        "nocolon",
        "pushgrid:",
        "pushgrid:type",
        "pushgrid:type=a,",
        "pushgrid:type=a,type=b",
        "pushgrid:*,*",
        "pushgrid:=a",
        'pushgrid:name="unterminated',
        'pushgrid:name="bad\\escape"',
        "pushgrid:name=a=b",
        "do:main:type=a",
    ],
)
def test_malformed_names_are_rejected(text: str) -> None:
    with pytest.raises(MalformedObjectName):
        ObjectName.parse(text)


def test_quoted_values_may_hold_separators() -> None:
    name = ObjectName.parse('pushgrid:type=Stats,name="a,b=c:d"')
    assert name.get("name") == "a,b=c:d"
    assert ObjectName.of("pushgrid", type="Stats", name="a,b=c:d") == name
    assert ObjectName.of("pushgrid", type="Stats", name="plain").canonical == (
        "pushgrid:name=plain,type=Stats"
    )
    assert ObjectName.unquote(ObjectName.quote('x"*?\\\ny')) == 'x"*?\\\ny'


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("*:*", "pushgrid:type=Server", True),
        ("pushgrid:*", "pushgrid:type=Server", True),
        ("other:*", "pushgrid:type=Server", False),
        ("pushgrid:type=Stats,*", "pushgrid:name=orders,type=Stats", True),
        ("pushgrid:*,type=Stats", "pushgrid:name=orders,type=Stats", True),
        ("pushgrid:type=Stats,*", "pushgrid:type=Server", False),
        ("pushgrid:name=*,type=Stats", "pushgrid:type=Stats,name=orders", True),
        ("pushgrid:type=Stats,name=*", "pushgrid:name=orders,type=Stats", True),
        ("pushgrid:type=*", "pushgrid:name=orders,type=Stats", False),
        ("push*:type=Se?ver", "pushgrid:type=Server", True),
        ("push?:type=Server", "pushgrid:type=Server", False),
        ("pushgrid:name=ord*,type=Stats", "pushgrid:name=orders,type=Stats", True),
        ("pushgrid:name=tr*,type=Stats", "pushgrid:name=orders,type=Stats", False),
        ('pushgrid:name="a*",type=Stats', 'pushgrid:name="a,b",type=Stats', True),
    ],
)
def test_pattern_matching(pattern: str, name: str, expected: bool) -> None:
    query = ObjectName.parse(pattern)
    assert query.is_pattern
    assert query.matches(ObjectName.parse(name)) is expected


def test_pattern_flags() -> None:
    assert ObjectName.parse("*:type=Server").is_domain_pattern
    assert ObjectName.parse("pushgrid:type=S*").is_property_value_pattern
    assert ObjectName.parse("pushgrid:*").property_list_pattern
    assert str(ObjectName.parse("pushgrid:*")) == "pushgrid:*"
    assert str(ObjectName.parse("pushgrid:type=Stats,*")) == "pushgrid:type=Stats,*"
    escaped = ObjectName.parse('pushgrid:name="a\\*",type=Stats')
    assert not escaped.is_pattern
    assert not escaped.matches(ObjectName.parse('pushgrid:name="a,b",type=Stats'))


# ------------------------------------------------------------------------------- registry


def test_registry_get_is_key_order_independent(fixture: Fixture) -> None:
    registry = fixture.registry
    first = registry.get("pushgrid:type=Stats,name=orders")
    assert first is not None
    assert first is registry.get("pushgrid:name=orders,type=Stats")
    assert "pushgrid:type=Server" in registry
    assert "pushgrid:type=Nope" not in registry
    assert "not a name" not in registry
    assert len(registry) == 5


def test_registry_match_sorted_and_filtered(fixture: Fixture) -> None:
    names = [bean.object_name.canonical for bean in fixture.registry.match("pushgrid:type=Stats,*")]
    assert names == [
        "pushgrid:name=eu/west,type=Stats",
        "pushgrid:name=orders,type=Stats",
        "pushgrid:name=trades,type=Stats",
    ]
    assert [b.object_name.canonical for b in fixture.registry.match("pushgrid:type=Server")] == [
        "pushgrid:type=Server"
    ]
    assert fixture.registry.match("nothing:*") == []


def test_registry_register_and_unregister(fixture: Fixture) -> None:
    registry = fixture.registry
    duplicate = MBean("pushgrid:type=Server", "again")
    with pytest.raises(InstanceAlreadyExists):
        registry.register(duplicate)
    registry.register(duplicate, replace=True)
    assert registry.get("pushgrid:type=Server") is duplicate
    assert registry.unregister("pushgrid:type=Server")
    assert not registry.unregister("pushgrid:type=Server")
    assert registry.get("pushgrid:type=Server") is None
    assert str(registry.names()[0]) == "pushgrid:name=eu/west,type=Stats"


def test_mbean_cannot_be_named_by_a_pattern() -> None:
    with pytest.raises(MalformedObjectName):
        MBean("pushgrid:type=*", "no")


# ------------------------------------------------------------------------------- version


@pytest.mark.parametrize("path", ["", "/", "/version", "/version/"])
def test_get_version(agent: JolokiaAgent, path: str) -> None:
    answer = get(agent, path)
    assert answer["status"] == 200
    assert answer["timestamp"] == int(NOW)
    assert isinstance(answer["timestamp"], int)
    assert answer["request"] == {"type": "version"}
    version = answer["value"]
    assert version["agent"]
    assert version["protocol"] == PROTOCOL_VERSION == "7.2"
    assert version["config"]["agentId"] == "pushgrid-test-1"
    assert version["info"] == {"product": "pushgrid", "vendor": "pushgrid", "version": "0.1.0"}


def test_post_version(agent: JolokiaAgent) -> None:
    version = value(post(agent, {"type": "version"}))
    assert version["protocol"] == "7.2"
    assert version["info"]["product"] == "pushgrid"


# ------------------------------------------------------------------------------- read


def test_get_read_single_attribute(agent: JolokiaAgent) -> None:
    answer = get(agent, "/read/pushgrid:type=Server/Uptime")
    assert answer == {
        "value": 42,
        "status": 200,
        "timestamp": int(NOW),
        "request": {"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Uptime"},
    }


def test_read_all_attributes_is_a_map(agent: JolokiaAgent) -> None:
    answer = value(get(agent, "/read/pushgrid:type=Stats,name=orders"))
    assert answer == {"Published": 10, "Rate": 1.0}


def test_read_all_fails_on_a_broken_getter_unless_ignore_errors(agent: JolokiaAgent) -> None:
    answer = get(agent, "/read/pushgrid:type=Server")
    assert answer["status"] == 500
    assert answer["error_type"] == "RuntimeError"
    assert "getter exploded" in answer["error"]
    lenient = value(get(agent, "/read/pushgrid:type=Server", {"ignoreErrors": "true"}))
    assert lenient["Uptime"] == 42
    assert lenient["Load"] is None
    assert lenient["Broken"].startswith("ERROR: getter exploded")


def test_get_read_several_attributes(agent: JolokiaAgent) -> None:
    answer = get(agent, "/read/pushgrid:type=Server/Uptime,Version")
    assert answer["value"] == {"Uptime": 42, "Version": "1.2.3"}
    assert answer["request"]["attribute"] == ["Uptime", "Version"]


def test_post_read_attribute_list_even_of_one_is_a_map(agent: JolokiaAgent) -> None:
    request = {"type": "read", "mbean": "pushgrid:type=Server", "attribute": ["Uptime"]}
    assert value(post(agent, request)) == {"Uptime": 42}
    request["attribute"] = ["Uptime", "Version"]
    assert value(post(agent, request)) == {"Uptime": 42, "Version": "1.2.3"}


class Census(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    count: Annotated[int, java("int", "How many rows")]
    rows: Annotated[list[int], java("java.util.List", "The rows")]


def test_attributes_read_together_come_from_one_build_of_their_document() -> None:
    """A process reporting between two getters must not make ``Count`` disagree with ``Rows``
    (a fresh-clone run read ``Workers = 1`` beside two processes)."""
    builds: list[int] = []

    def build() -> Census:  # every build sees one more row, as if a process just reported
        builds.append(1)
        rows = list(range(len(builds)))
        return Census(count=len(rows), rows=rows)

    registry = MBeanRegistry()
    name = ObjectName.parse("pushgrid:type=Census")
    registry.register(MBean(name, "census", document_attributes(Census, build), []))
    agent = JolokiaAgent(registry, "pushgrid-test-1", "0.1.0", clock=lambda: NOW)
    whole = value(get(agent, "/read/pushgrid:type=Census"))
    assert whole["Count"] == len(whole["Rows"])
    assert len(builds) == 1
    listed = value(get(agent, "/read/pushgrid:type=Census/Count,Rows"))
    assert listed["Count"] == len(listed["Rows"]) == 2
    pattern = value(get(agent, "/read/pushgrid:type=*"))["pushgrid:type=Census"]
    assert pattern["Count"] == len(pattern["Rows"]) == 3
    assert value(get(agent, "/read/pushgrid:type=Census/Count")) == 4  # alone: a build of its own
    assert len(builds) == 4


def test_nan_becomes_null(agent: JolokiaAgent) -> None:
    answer = get(agent, "/read/pushgrid:type=Server/Load")
    assert answer["status"] == 200
    assert answer["value"] is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/read/pushgrid:type=Server/Info/host", "h1"),
        ("/read/pushgrid:type=Server/Info/ports/1", 8081),
        ("/read/pushgrid:type=Server/Info/nested/a/b", 1),
        ("/read/pushgrid:type=Server/Info/nested", {"a": {"b": 1}}),
    ],
)
def test_get_read_with_inner_path(agent: JolokiaAgent, path: str, expected: Any) -> None:
    assert value(get(agent, path)) == expected


def test_post_read_with_inner_path_and_echo(agent: JolokiaAgent) -> None:
    request = {
        "type": "read",
        "mbean": "pushgrid:type=Server",
        "attribute": "Info",
        "path": "nested/a",
    }
    answer = post(agent, request)
    assert answer["value"] == {"b": 1}
    assert answer["request"] == request


def test_inner_path_not_found_is_404(agent: JolokiaAgent) -> None:
    answer = get(agent, "/read/pushgrid:type=Server/Info/nope")
    assert answer["status"] == 404
    assert answer["error_type"] == "javax.management.AttributeNotFoundException"
    assert get(agent, "/read/pushgrid:type=Server/Info/ports/7")["status"] == 404


def test_read_pattern_returns_map_by_object_name(agent: JolokiaAgent) -> None:
    answer = value(get(agent, "/read/pushgrid:type=Stats,*/Published"))
    assert answer == {
        "pushgrid:name=eu/west,type=Stats": {"Published": 30},
        "pushgrid:name=orders,type=Stats": {"Published": 10},
        "pushgrid:name=trades,type=Stats": {"Published": 20},
    }


@pytest.mark.parametrize(
    "pattern",
    ["pushgrid:type=Stats,name=*", "pushgrid:name=*,type=Stats", "pushgrid:*,type=Stats"],
)
def test_read_pattern_key_order_does_not_matter(agent: JolokiaAgent, pattern: str) -> None:
    request = {"type": "read", "mbean": pattern, "attribute": ["Published", "Rate"]}
    answer = value(post(agent, request))
    assert answer["pushgrid:name=orders,type=Stats"] == {"Published": 10, "Rate": 1.0}
    assert len(answer) == 3


def test_read_pattern_skips_mbeans_without_the_attribute(agent: JolokiaAgent) -> None:
    answer = value(get(agent, "/read/pushgrid:*/Count"))
    assert answer == {"pushgrid:type=Sessions": {"Count": 3}}


def test_read_pattern_with_wildcard_path(agent: JolokiaAgent) -> None:
    request = {"type": "read", "mbean": "pushgrid:type=Stats,*", "path": "*/Published"}
    answer = value(post(agent, request))
    assert answer == {
        "pushgrid:name=eu/west,type=Stats": 30,
        "pushgrid:name=orders,type=Stats": 10,
        "pushgrid:name=trades,type=Stats": 20,
    }


def test_read_pattern_errors(agent: JolokiaAgent) -> None:
    no_bean = get(agent, "/read/nothing:*/Published")
    assert no_bean["status"] == 404
    assert no_bean["error_type"] == "javax.management.InstanceNotFoundException"
    no_attribute = get(agent, "/read/pushgrid:type=Stats,*/Nope")
    assert no_attribute["status"] == 404
    assert no_attribute["error_type"] == "javax.management.AttributeNotFoundException"


@pytest.mark.parametrize(
    ("path", "status", "error_type"),
    [
        ("/read/pushgrid:type=Nope/Uptime", 404, "javax.management.InstanceNotFoundException"),
        ("/read/pushgrid:type=Server/Nope", 404, "javax.management.AttributeNotFoundException"),
        ("/read", 400, "java.lang.IllegalArgumentException"),
        ("/read/not-a-name/Uptime", 400, "javax.management.MalformedObjectNameException"),
        ("/read/pushgrid:type=Server/Broken", 500, "RuntimeError"),
        ("/frobnicate/x", 400, "java.lang.IllegalArgumentException"),
        ("/write/pushgrid:type=Server/Uptime/5", 403, "java.lang.SecurityException"),
    ],
)
def test_get_errors_travel_inside_http_200(
    agent: JolokiaAgent, path: str, status: int, error_type: str
) -> None:
    answer = get(agent, path)
    assert answer["status"] == status
    assert answer["error_type"] == error_type
    assert error_type in answer["error"]
    assert answer["timestamp"] == int(NOW)
    assert "request" in answer
    assert "value" not in answer


def test_missing_mbean_in_post_is_400(agent: JolokiaAgent) -> None:
    answer = post(agent, {"type": "read", "mbean": None, "attribute": "Uptime"})
    assert answer["status"] == 400
    answer = post(agent, {"type": "read", "attribute": "Uptime"})
    assert answer["status"] == 400


# ------------------------------------------------------------------------------- escaping


def test_get_escaped_slash_in_mbean_name(agent: JolokiaAgent) -> None:
    assert value(get(agent, "/read/pushgrid:name=eu!/west,type=Stats/Published")) == 30
    answer = get(agent, "/read/pushgrid:type=Stats,name=eu!/west/Published")
    assert answer["request"]["mbean"] == "pushgrid:type=Stats,name=eu/west"
    assert answer["value"] == 30


def test_get_percent_encoding_is_decoded(agent: JolokiaAgent) -> None:
    assert value(get(agent, "/read/pushgrid%3Atype%3DServer/Uptime")) == 42
    # jolokia.js escapes '/' as '!/' and then URI-encodes it as '!%2F'
    assert value(get(agent, "/read/pushgrid:name=eu!%2Fwest,type=Stats/Published")) == 30


def test_get_escaped_slash_in_exec_argument(agent: JolokiaAgent) -> None:
    assert value(get(agent, "/exec/pushgrid:type=Server/echo/a!/b!!c")) == "a/b!c"


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("a/b/c", ["a", "b", "c"]),
        ("a!/b/c", ["a/b", "c"]),
        ("a!!/b", ["a!", "b"]),
        ("a!!!/b", ["a!/b"]),
        ('a!"b', ['a"b']),
        ("a!xb", ["axb"]),
        ("", [""]),
        ("a/", ["a", ""]),
    ],
)
def test_split_path(text: str, segments: list[str]) -> None:
    assert split_path(text) == segments


@pytest.mark.parametrize("segment", ["plain", "a/b", "a!b", "!/!!/", ""])
def test_escape_segment_round_trips(segment: str) -> None:
    assert split_path(escape_segment(segment)) == [segment]


# ------------------------------------------------------------------------------- exec


def test_get_exec_with_string_argument(agent: JolokiaAgent, fixture: Fixture) -> None:
    answer = get(agent, "/exec/pushgrid:type=Sessions/disconnect/abc")
    assert answer["value"] is True
    assert answer["request"] == {
        "type": "exec",
        "mbean": "pushgrid:type=Sessions",
        "operation": "disconnect",
        "arguments": ["abc"],
    }
    assert fixture.calls == [("disconnect", ("abc",))]


def test_get_exec_converts_to_declared_types(agent: JolokiaAgent, fixture: Fixture) -> None:
    assert value(get(agent, "/exec/pushgrid:type=Server/add/2/40")) == 42
    assert value(get(agent, "/exec/pushgrid:type=Server/scale/1.5/true")) == 3.0
    assert value(get(agent, "/exec/pushgrid:type=Server/scale/1.5/FALSE")) == 1.5
    assert fixture.calls[0] == ("add", (2, 40))
    assert fixture.calls[1] == ("scale", (1.5, True))


def test_get_exec_void_and_signature_and_tags(agent: JolokiaAgent, fixture: Fixture) -> None:
    assert value(get(agent, "/exec/pushgrid:type=Server/gc")) is None
    assert value(get(agent, "/exec/pushgrid:type=Server/add(int,long)/1/2")) == 3
    assert value(get(agent, "/exec/pushgrid:type=Server/echo/[null]")) is None
    assert value(get(agent, '/exec/pushgrid:type=Server/echo/""')) == ""
    assert ("echo", (None,)) in fixture.calls


def test_post_exec_with_json_arguments(agent: JolokiaAgent) -> None:
    base = {"type": "exec", "mbean": "pushgrid:type=Server"}
    assert value(post(agent, {**base, "operation": "add", "arguments": [1, "2"]})) == 3
    assert value(post(agent, {**base, "operation": "add", "arguments": [1.0, 2]})) == 3
    scaled = post(agent, {**base, "operation": "scale", "arguments": [2, True]})
    assert value(scaled) == 4.0
    assert value(post(agent, {**base, "operation": "echo", "arguments": [7]})) == "7"
    assert value(post(agent, {**base, "operation": "gc"})) is None
    upper = {"type": "EXEC", "mbean": "pushgrid:type=Sessions", "operation": "ids"}
    assert value(post(agent, upper)) == ["abc", "def"]


@pytest.mark.parametrize(
    ("operation", "arguments", "status"),
    [
        ("add", ["x", 1], 400),
        ("add", [True, 1], 400),
        ("add", [1.5, 1], 400),
        ("add", [None, 1], 400),
        ("add", [1], 400),
        ("scale", [1, "maybe"], 400),
        ("gc", [1], 400),
        ("nope", [], 404),
        (None, [], 400),
        ("later", [], 500),
    ],
)
def test_post_exec_errors(
    agent: JolokiaAgent, operation: str | None, arguments: list[Any], status: int
) -> None:
    request = {
        "type": "exec",
        "mbean": "pushgrid:type=Server",
        "operation": operation,
        "arguments": arguments,
    }
    answer = post(agent, request)
    assert answer["status"] == status, answer
    assert answer["request"] == request


def test_exec_on_pattern_or_unknown_mbean(agent: JolokiaAgent) -> None:
    assert get(agent, "/exec/pushgrid:type=*/gc")["status"] == 400
    assert get(agent, "/exec/pushgrid:type=Nope/gc")["status"] == 404


def test_exec_can_be_forbidden(fixture: Fixture) -> None:
    agent = JolokiaAgent(fixture.registry, "a", "1", allow_exec=False, get_refused=frozenset())
    answer = get(agent, "/exec/pushgrid:type=Sessions/disconnect/abc")
    assert answer["status"] == 403
    assert answer["error_type"] == "java.lang.SecurityException"
    assert fixture.calls == []
    assert get(agent, "/read/pushgrid:type=Server/Uptime")["status"] == 200


# ------------------------------------------------------------------------------- search


def test_get_search(agent: JolokiaAgent) -> None:
    assert value(get(agent, "/search/pushgrid:*")) == [
        "pushgrid:name=eu/west,type=Stats",
        "pushgrid:name=orders,type=Stats",
        "pushgrid:name=trades,type=Stats",
        "pushgrid:type=Server",
        "pushgrid:type=Sessions",
    ]
    assert value(get(agent, "/search/*:type=Se*")) == [
        "pushgrid:type=Server",
        "pushgrid:type=Sessions",
    ]
    assert value(get(agent, "/search/nothing:*")) == []


def test_post_search_key_order_does_not_matter(agent: JolokiaAgent) -> None:
    first = value(post(agent, {"type": "search", "mbean": "pushgrid:type=Stats,name=o*"}))
    second = value(post(agent, {"type": "search", "mbean": "pushgrid:name=o*,type=Stats"}))
    assert first == second == ["pushgrid:name=orders,type=Stats"]
    assert value(post(agent, {"type": "search", "mbean": "pushgrid:type=Server"})) == [
        "pushgrid:type=Server"
    ]


# ------------------------------------------------------------------------------- list


def test_get_list_structure(agent: JolokiaAgent) -> None:
    tree = value(get(agent, "/list"))
    assert set(tree) == {"pushgrid"}
    assert set(tree["pushgrid"]) == {
        "type=Server",
        "type=Sessions",
        "name=orders,type=Stats",
        "name=trades,type=Stats",
        "name=eu/west,type=Stats",
    }
    server = tree["pushgrid"]["type=Server"]
    assert server["desc"] == "The push server"
    assert server["attr"]["Uptime"] == {"type": "long", "desc": "Seconds since start", "rw": False}
    assert server["op"]["add"] == {
        "args": [
            {"name": "a", "type": "int", "desc": "first"},
            {"name": "b", "type": "long", "desc": "second"},
        ],
        "ret": "long",
        "desc": "Sum of two numbers",
    }
    assert server["op"]["gc"]["args"] == []


def test_list_with_path(agent: JolokiaAgent) -> None:
    assert set(value(get(agent, "/list/pushgrid"))) >= {"type=Server", "type=Sessions"}
    sessions = value(get(agent, "/list/pushgrid/type=Sessions"))
    assert set(sessions) == {"desc", "attr", "op"}
    uptime = value(get(agent, "/list/pushgrid/type=Server/attr/Uptime"))
    assert uptime["type"] == "long"
    # key order in the path does not matter; slashes in names are escaped
    stats = value(post(agent, {"type": "list", "path": "pushgrid/type=Stats,name=orders/attr"}))
    assert set(stats) == {"Published", "Rate"}
    escaped = value(get(agent, "/list/pushgrid/name=eu!/west,type=Stats/desc"))
    assert escaped == "Statistics of eu/west"


def test_list_unknown_path_is_404(agent: JolokiaAgent) -> None:
    assert get(agent, "/list/nothing")["status"] == 404
    assert get(agent, "/list/pushgrid/type=Nope")["status"] == 404


def test_list_max_depth(agent: JolokiaAgent) -> None:
    assert value(get(agent, "/list", {"maxDepth": "1"})) == {"pushgrid": 1}
    two = value(post(agent, {"type": "list", "config": {"maxDepth": 2}}))
    assert two["pushgrid"]["type=Server"] == 1
    assert len(two["pushgrid"]) == 5
    deep = value(post(agent, {"type": "list", "config": {"maxDepth": 7}}))
    assert deep == value(get(agent, "/list"))


# ------------------------------------------------------------------------------- bulk / POST


def test_bulk_answers_in_order_and_errors_stay_local(agent: JolokiaAgent) -> None:
    requests = [
        {"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Uptime"},
        {"type": "read", "mbean": "pushgrid:type=Nope", "attribute": "Uptime"},
        {"type": "search", "mbean": "*:type=Sessions,*"},
        "not an object",
        {"type": "exec", "mbean": "pushgrid:type=Server", "operation": "add", "arguments": [1, 1]},
        {"type": "version"},
    ]
    answers = post(agent, requests)
    assert [answer["status"] for answer in answers] == [200, 404, 200, 400, 200, 200]
    assert [answer["request"] for answer in answers] == requests
    assert answers[0]["value"] == 42
    assert answers[2]["value"] == ["pushgrid:type=Sessions"]
    assert answers[4]["value"] == 2
    assert post(agent, []) == []


def test_post_read_path_as_list_or_escaped_string(agent: JolokiaAgent) -> None:
    request: dict[str, Any] = {"type": "read", "mbean": "pushgrid:type=Server"}
    request |= {"attribute": "Info", "path": ["ports", "0"]}
    assert value(post(agent, request)) == 8080
    request["path"] = "k!/v"
    assert value(post(agent, request)) == 7
    assert value(get(agent, "/read/pushgrid:type=Server/Info/k!/v")) == 7


@pytest.mark.parametrize("body", [b"{not json", b"", b"[1,", b"NaN"])
def test_malformed_json_is_http_400(agent: JolokiaAgent, body: bytes) -> None:
    status, payload = agent.handle_post(body)
    assert status == 400
    answer = decode(payload)
    assert answer["status"] == 400
    assert answer["error_type"] == "java.lang.IllegalArgumentException"


@pytest.mark.parametrize("body", [b"42", b'"read"', b"null"])
def test_json_that_is_not_a_request_is_http_400(agent: JolokiaAgent, body: bytes) -> None:
    status, _ = agent.handle_post(body)
    assert status == 400


def test_type_is_required_unless_the_post_path_names_it(agent: JolokiaAgent) -> None:
    request = {"mbean": "pushgrid:type=Server", "attribute": "Uptime"}
    assert post(agent, request)["status"] == 400
    assert value(post(agent, request, "/read")) == 42
    assert post(agent, {"type": 7})["status"] == 400


def test_include_request_false_drops_the_echo(agent: JolokiaAgent) -> None:
    request = {"type": "version", "config": {"includeRequest": False}}
    assert "request" not in post(agent, request)
    assert "request" not in get(agent, "/version", {"includeRequest": "false"})


def test_config_that_is_not_an_object_is_ignored(agent: JolokiaAgent) -> None:
    assert value(post(agent, {"type": "version", "config": ["x"]}))["protocol"] == "7.2"


def test_post_ignore_errors_config(agent: JolokiaAgent) -> None:
    request = {
        "type": "read",
        "mbean": "pushgrid:type=Server",
        "attribute": ["Uptime", "Nope"],
        "config": {"ignoreErrors": True},
    }
    answer = value(post(agent, request))
    assert answer["Uptime"] == 42
    assert "AttributeNotFoundException" in answer["Nope"]
    del request["config"]
    assert post(agent, request)["status"] == 404


# ------------------------------------------------------------------------------- real clients


def test_telegraf_jolokia2_bulk_read(agent: JolokiaAgent) -> None:
    """Telegraf POSTs to <base>/read, needs an array back and matches answers by the echo."""
    body = (
        b'[{"type":"read","mbean":"pushgrid:type=Server","attribute":["Uptime","Version"]},'
        b'{"type":"read","mbean":"pushgrid:type=Server","attribute":"Info","path":"nested/a"},'
        b'{"type":"read","mbean":"pushgrid:type=Stats,name=*","attribute":["Published","Rate"]},'
        b'{"type":"read","mbean":"pushgrid:type=Sessions"},'
        b'{"type":"read","mbean":"pushgrid:type=Gone,name=*","attribute":"Published"}]'
    )
    status, payload = agent.handle_post(body, "/read")
    assert status == 200
    answers = decode(payload)
    assert isinstance(answers, list)
    assert len(answers) == 5
    sent = decode(body)
    for request, answer in zip(sent, answers, strict=True):
        assert answer["request"]["mbean"] == request["mbean"]
        assert answer["request"].get("attribute") == request.get("attribute")
        assert answer["request"].get("path", "") == request.get("path", "")
    assert answers[0]["value"] == {"Uptime": 42, "Version": "1.2.3"}
    assert answers[1]["value"] == {"b": 1}
    assert answers[2]["value"]["pushgrid:name=trades,type=Stats"] == {"Published": 20, "Rate": 2.0}
    assert answers[3]["value"] == {"Count": 3}
    assert answers[4]["status"] == 404  # Telegraf skips 404s silently


def test_pypi_jolokia_client_requests(agent: JolokiaAgent) -> None:
    """JolokiaClient posts to the base URL with ``requests``' json= (exact bytes)."""
    read = b'{"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Uptime", "path": null}'
    assert value(post(agent, read)) == 42
    bulk = (
        b'[{"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Uptime", "path": null},'
        b' {"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Version", "path": null}]'
    )
    assert [value(answer) for answer in post(agent, bulk)] == [42, "1.2.3"]
    inner = (
        b'{"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Info", "path": "host"}'
    )
    assert value(post(agent, inner)) == "h1"
    execute = (
        b'{"mbean": "pushgrid:type=Sessions", "operation": "disconnect", "arguments": ["abc"],'
        b' "type": "exec"}'
    )
    assert value(post(agent, execute)) is True
    assert value(post(agent, b'{"mbean": "pushgrid:*", "type": "search"}'))
    assert "pushgrid" in value(post(agent, b'{"type": "list", "path": null}'))
    assert "type=Server" in value(post(agent, b'{"type": "list", "path": "pushgrid"}'))
    assert value(post(agent, b'{"type": "version"}'))["protocol"] == "7.2"
    write = (
        b'{"type": "write", "mbean": "pushgrid:type=Server", "attribute": "Uptime", "value": 5,'
        b' "path": null}'
    )
    assert post(agent, write)["status"] == 403


def test_pyjolokia_requests(agent: JolokiaAgent) -> None:
    """pyjolokia always sends ``config`` and null mbean/path/arguments (exact bytes)."""
    read = (
        b'{"type": "read", "config": {}, "mbean": "pushgrid:type=Server", "attribute": "Uptime",'
        b' "path": null}'
    )
    assert value(post(agent, read)) == 42
    execute = (
        b'{"type": "exec", "config": {}, "mbean": "pushgrid:type=Sessions", "operation":'
        b' "disconnect", "arguments": ["abc"]}'
    )
    assert value(post(agent, execute)) is True
    no_arguments = (
        b'{"type": "exec", "config": {}, "mbean": "pushgrid:type=Server", "operation": "gc",'
        b' "arguments": null}'
    )
    assert value(post(agent, no_arguments)) is None
    search = b'{"type": "search", "config": {}, "mbean": "pushgrid:*"}'
    assert len(value(post(agent, search))) == 5
    assert "pushgrid" in value(post(agent, b'{"type": "list", "config": {}, "path": null}'))
    listed = b'{"type": "list", "config": {}, "path": "pushgrid/type=Server"}'
    assert "attr" in value(post(agent, listed))
    version = b'{"type": "version", "config": {}, "mbean": null}'
    assert value(post(agent, version))["agent"]
    bulk = (
        b'[{"type": "read", "config": {}, "mbean": "pushgrid:type=Server", "attribute":'
        b' "Uptime", "path": null}, {"type": "read", "config": {}, "mbean": "pushgrid:type=Nope",'
        b' "attribute": "Uptime", "path": null}, {"type": "search", "config": {}, "mbean": "*:*"}]'
    )
    assert [answer["status"] for answer in post(agent, bulk)] == [200, 404, 200]


def test_hawtio_discovery_get_has_value_agent(agent: JolokiaAgent) -> None:
    assert get(agent, "")["value"]["agent"]


# ------------------------------------------------------------------------------- HTTP helper


def test_handle_http_routes_methods_and_p_parameter(agent: JolokiaAgent) -> None:
    status, payload = agent.handle_http("GET", "/read/pushgrid:type=Server/Uptime")
    assert (status, decode(payload)["value"]) == (200, 42)
    status, payload = agent.handle_http(
        "GET", "", "p=/read/pushgrid:name%3Deu!%2Fwest,type%3DStats"
    )
    assert decode(payload)["value"]["Published"] == 30
    body = b'{"type":"read","mbean":"pushgrid:type=Server","attribute":"Uptime"}'
    status, payload = agent.handle_http("POST", "", "", body)
    assert (status, decode(payload)["value"]) == (200, 42)
    status, payload = agent.handle_http("GET", "/list", "maxDepth=1")
    assert decode(payload)["value"] == {"pushgrid": 1}
    status, payload = agent.handle_http("HEAD", "/version")
    assert (status, decode(payload)["status"]) == (200, 200)
    status, _ = agent.handle_http("DELETE", "/read")
    assert status == 405


def test_content_type() -> None:
    assert content_type() == "text/plain; charset=utf-8"
    assert content_type({"mimeType": "application/json"}) == "application/json"


# ------------------------------------------------------------------------------- helpers


def test_to_json_value() -> None:
    data = {
        1: (1.5, math.inf, -math.inf, math.nan),
        "set": {3, 1, 2},
        "enum": Color.RED,
        Color.RED: "key",
        "point": Point(1, math.nan),
        "name": ObjectName.parse("pushgrid:type=Server"),
        "when": datetime.date(2024, 1, 2),
        "bytes": b"hi",
        "other": object,
    }
    converted = to_json_value(data)
    assert converted["1"] == [1.5, None, None, None]
    assert converted["set"] == [1, 2, 3]
    assert converted["enum"] == "RED"
    assert converted["RED"] == "key"
    assert converted["point"] == {"x": 1, "y": None}
    assert converted["name"] == {"objectName": "pushgrid:type=Server"}
    assert converted["when"] == "2024-01-02"
    assert converted["bytes"] == "hi"
    assert converted["other"] == str(object)
    msgspec.json.encode(converted)


@pytest.mark.parametrize(
    ("raw", "java_type", "expected"),
    [
        ("5", "int", 5),
        (5, "long", 5),
        (5.0, "java.lang.Long", 5),
        ("2.5", "double", 2.5),
        (2, "float", 2.0),
        ("true", "boolean", True),
        ("False", "java.lang.Boolean", False),
        (False, "boolean", False),
        (12, "java.lang.String", "12"),
        (True, "java.lang.String", "true"),
        (None, "java.lang.String", None),
        ("1,2,3", "int[]", [1, 2, 3]),
        (["1", 2], "[J", [1, 2]),
        ({"a": 1}, "java.util.Map", {"a": 1}),
        ([1, "x"], "java.util.List", [1, "x"]),
        ("anything", "com.example.Custom", "anything"),
    ],
)
def test_convert_argument(raw: Any, java_type: str, expected: Any) -> None:
    assert convert_argument(raw, java_type) == expected


@pytest.mark.parametrize(
    ("raw", "java_type"),
    [
        (None, "int"),
        (True, "int"),
        ("x", "long"),
        (1.5, "int"),
        ("yes", "boolean"),
        (1, "boolean"),
        ([1], "java.lang.String"),
        ("x", "java.util.Map"),
        (5, "int[]"),
    ],
)
def test_convert_argument_rejects(raw: Any, java_type: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        convert_argument(raw, java_type)


def test_navigate() -> None:
    data = {"a": {"x": 1, "y": 2}, "b": {"x": 3}, "c": [{"x": 4}, {"z": 5}]}
    assert navigate(data, []) is data
    assert navigate(data, ["a", "y"]) == 2
    assert navigate(data, ["c", "0", "x"]) == 4
    assert navigate(data, ["*", "x"]) == {"a": 1, "b": 3}
    assert navigate(data, ["c", "*", "x"]) == [4]
    assert navigate(data, ["*", "*", "x"]) == {"c": [4]}
    with pytest.raises(PathNotFound):
        navigate(data, ["a", "z"])
    with pytest.raises(PathNotFound):
        navigate(data, ["c", "-1"])


# ------------------------------------------------------------------ bounds (issue 22 item 2)


def bounded_agent(fixture: Fixture, **limits: int) -> JolokiaAgent:
    """An agent as the server builds it: exec/write over GET refused, the given limits."""
    return JolokiaAgent(
        fixture.registry,
        "pushgrid-test-1",
        "0.1.0",
        clock=lambda: NOW,
        limits=JolokiaLimits(**limits),
    )


@pytest.mark.parametrize(
    "path",
    [
        "/exec/pushgrid:type=Sessions/disconnect/abc",
        "/write/pushgrid:type=Server/Name/x",
    ],
)
def test_get_exec_refused_by_default(fixture: Fixture, path: str) -> None:
    agent = bounded_agent(fixture)
    for status, payload in (
        agent.handle_http("GET", path),
        agent.handle_http("HEAD", path),
        agent.handle_http("GET", "", f"p={path}"),
    ):
        assert status == 405
        assert "need a POST" in decode(payload)["error"]
    assert fixture.calls == [], "nothing ran"
    status, payload = agent.handle_http(
        "POST",
        "",
        "",
        msgspec.json.encode(
            {
                "type": "exec",
                "mbean": "pushgrid:type=Sessions",
                "operation": "disconnect",
                "arguments": ["abc"],
            }
        ),
    )
    assert (status, decode(payload)["value"]) == (200, True)


def test_bulk_above_the_cap_is_one_jolokia_error(fixture: Fixture) -> None:
    agent = bounded_agent(fixture, max_bulk_requests=3)
    status, payload = agent.handle_post(msgspec.json.encode([{"type": "version"}] * 4))
    answer = decode(payload)
    assert status == 413
    assert answer["status"] == 413
    assert "4 requests: at most 3" in answer["error"]
    status, payload = agent.handle_post(msgspec.json.encode([{"type": "version"}] * 3))
    assert status == 200
    assert [a["status"] for a in decode(payload)] == [200, 200, 200]


def test_answer_cap_replaces_the_answers_past_it(fixture: Fixture) -> None:
    size = len(bounded_agent(fixture).handle_post(b'{"type": "list"}')[1])
    agent = bounded_agent(fixture, max_answer_bytes=2 * size + 10)
    status, payload = agent.handle_post(msgspec.json.encode([{"type": "list"}] * 5))
    answers = decode(payload)
    assert status == 200
    assert [a["status"] for a in answers] == [200, 200, 413, 413, 413]
    assert "JolokiaMaxAnswerBytes" in answers[2]["error"]
    assert answers[2]["request"] == {"type": "list"}
    assert len(payload) < 2 * size + 10 + 3 * 1024
    small = bounded_agent(fixture, max_answer_bytes=size - 1)
    status, payload = small.handle_post(b'{"type": "list"}')
    assert (status, decode(payload)["status"]) == (200, 413)


def test_list_tree_built_once_per_registry_generation(fixture: Fixture) -> None:
    agent = bounded_agent(fixture)
    first = agent._list_tree()
    assert agent._list_tree() is first, "the same tree, not rebuilt"
    fixture.registry.register(MBean(ObjectName.of("pushgrid", type="Extra"), "extra", [], []))
    second = agent._list_tree()
    assert second is not first
    assert "type=Extra" in second["pushgrid"]
    assert value(post(agent, {"type": "list", "path": "pushgrid/type=Extra"}))["desc"] == "extra"
