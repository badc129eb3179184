"""One exception tree: every exception class of ours derives from PushgridError, the tree in
pushgrid/protocol/exceptions.py's docstring is the real one, and the retry/code rules hold (as
data below)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import pushgrid.protocol.exceptions
from pushgrid.admin_api.member_client import MemberEndpoint, MemberFailure, MemberJolokiaError
from pushgrid.admin_api.problems import ProblemError
from pushgrid.client.client import ConnectFailed
from pushgrid.client.closecodes import rule_for_close
from pushgrid.console.provider import ProviderError
from pushgrid.kernel.jmxquery import JmxError
from pushgrid.protocol.errors import CloseCode, ErrorCode, LocalProtocolError, RemoteProtocolError
from pushgrid.protocol.exceptions import PushgridError
from pushgrid.server.engine.base import EngineUnavailable

ROOT = Path(__file__).resolve().parents[2]
#: the folders of the pushgrid namespace (each installs as pushgrid.<folder>), and its own root
PACKAGES = (
    "server",
    "client",
    "admin_api",
    "spark_stats",
    "metrics",
    "console",
    "pushgrid/protocol",
    "pushgrid/config",
    "pushgrid/kernel",
    "pushgrid/cli",
)

# Private exceptions that never leave their module: control flow, not errors a caller sees.
EXEMPT: dict[str, str] = {
    "_NoReply": "jetstream: a batched read timed out; caught in the same method, asked again",
    "_Dead": "client: keepalive deadline passed; caught by the connection loop -> reconnect",
    "_BadWelcome": "client: no valid welcome; caught by the connection loop -> reconnect",
}

# --- discovery --------------------------------------------------------------------------------


def _module_names() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__main__.py":  # runs a CLI when imported; checked by the AST walk
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[0] != "pushgrid":
                parts.insert(0, "pushgrid")
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _our_exceptions() -> dict[tuple[str, str], type[BaseException]]:
    found = {}
    for name in _module_names():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and value.__qualname__ == attr
            ):
                found[(name, attr)] = value
    return found


@pytest.fixture(scope="module")
def exceptions() -> dict[tuple[str, str], type[BaseException]]:
    return _our_exceptions()


def test_every_exception_class_derives_from_the_root(
    exceptions: dict[tuple[str, str], type[BaseException]],
) -> None:
    outside = {
        f"{module}.{name}"
        for (module, name), cls in exceptions.items()
        if not issubclass(cls, PushgridError) and name not in EXEMPT
    }
    assert outside == set(), (
        "derive these from pushgrid.protocol.exceptions.PushgridError (or a branch)"
    )
    for name in EXEMPT:
        assert name.startswith("_"), "only private control-flow classes may stay outside"
        assert any(n == name for _, n in exceptions), f"stale exemption {name}"


def test_no_exception_class_hides_where_imports_do_not_look(
    exceptions: dict[tuple[str, str], type[BaseException]],
) -> None:
    """Classes inside functions or in __main__ modules escape the import walk: the AST sees them."""
    known = {name for _, name in exceptions}
    hidden = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef) or node.name in known:
                    continue
                bases = " ".join(ast.unparse(base) for base in node.bases)
                if re.search(r"Error|Exception|Refused|Failed|Unavailable", bases):
                    hidden.append(f"{path.relative_to(ROOT)}: {node.name}({bases})")
    assert hidden == []


def test_the_root_module_imports_nothing_of_ours() -> None:
    """Every package (metrics too, which imports nothing else of ours) may import it."""
    tree = ast.parse(Path(pushgrid.protocol.exceptions.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports in the leaf"
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


# --- the documented tree ----------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    name: str
    module: str
    depth: int
    parent: str | None
    code: str
    retry: str


TREE_LINE = re.compile(r"^(?P<indent>[│├└─ ]*)(?P<name>\w+) \((?P<module>[\w.]+)\)\s+(?P<rest>.+)$")


def _documented_tree() -> list[Entry]:
    entries: list[Entry] = []
    stack: list[str] = []
    for line in (pushgrid.protocol.exceptions.__doc__ or "").splitlines():
        match = TREE_LINE.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 4
        code, retry = re.split(r"\s{2,}", match["rest"].strip())
        del stack[depth:]
        parent = stack[-1] if stack else None
        entries.append(Entry(match["name"], match["module"], depth, parent, code, retry))
        stack.append(f"{match['module']}.{match['name']}")
    return entries


def test_the_docstring_tree_lists_every_class_in_its_place(
    exceptions: dict[tuple[str, str], type[BaseException]],
) -> None:
    entries = _documented_tree()
    documented = {(e.module, e.name) for e in entries}
    derived = {key for key, cls in exceptions.items() if issubclass(cls, PushgridError)}
    assert derived - documented == set(), "add these to the tree in pushgrid/protocol/exceptions.py"
    assert documented - derived == set(), "the tree names classes that are not there"
    for entry in entries:
        cls = exceptions[(entry.module, entry.name)]
        ours = [b for b in cls.__bases__ if issubclass(b, PushgridError)]
        parent = f"{ours[0].__module__}.{ours[0].__name__}" if ours else None
        assert (entry.name, parent) == (entry.name, entry.parent)
        assert len(ours) <= 1, f"{entry.name}: one place in the tree"
        assert ours == [] or cls.__bases__[0] is ours[0], "our branch first, the built-in second"


def test_fixed_codes_and_retry_rules_are_the_documented_ones(
    exceptions: dict[tuple[str, str], type[BaseException]],
) -> None:
    for entry in _documented_tree():
        cls = exceptions[(entry.module, entry.name)]
        assert issubclass(cls, PushgridError)
        if not entry.code.startswith(("per ", "member_")):
            assert cls.code == entry.code, entry.name
        if entry.retry in ("yes", "no"):
            assert cls.retryable is (entry.retry == "yes"), entry.name


def test_docs_show_the_same_tree_and_name_every_class() -> None:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    docstring = (pushgrid.protocol.exceptions.__doc__ or "").splitlines()
    tree = [line.rstrip() for line in docstring if TREE_LINE.match(line)]
    assert [line.rstrip() for line in text.splitlines() if TREE_LINE.match(line)] == tree
    missing = [e.name for e in _documented_tree() if f"`{e.name}`" not in text]
    assert missing == []


# --- rules that depend on the instance, as data --------------------------------------------------

ERROR_CODE_RETRY: dict[ErrorCode, bool] = {
    ErrorCode.INVALID_JSON: False,
    ErrorCode.INVALID_FRAME: False,
    ErrorCode.UNKNOWN_OP: False,
    ErrorCode.INVALID_SUBJECT: False,
    ErrorCode.MESSAGE_TOO_LARGE: False,
    ErrorCode.TOO_MANY_SUBSCRIPTIONS: False,
    ErrorCode.NOT_SUBSCRIBED: False,
    ErrorCode.DENIED: False,
    ErrorCode.BINARY_NOT_SUPPORTED: False,
    ErrorCode.RATE_LIMITED: True,  # slow down, send again
    ErrorCode.TOO_MANY_FIELDS: False,
    ErrorCode.SNAPSHOT_TOO_LARGE: False,
    ErrorCode.RESERVED_SUBJECT: False,
    ErrorCode.PRESENCE_DISABLED: False,
    ErrorCode.INTERNAL: True,  # a server fault: again with backoff (as close code 1011)
    ErrorCode.ENGINE_UNAVAILABLE: True,  # no quorum yet: subscribe again with backoff
    ErrorCode.TOO_MANY_SUBJECTS: True,  # MaxSubjects: idle subjects are evicted meanwhile
    ErrorCode.RETAINED_BYTES_EXCEEDED: True,  # MaxRetainedBytes: likewise
    ErrorCode.DEDUP_TABLE_FULL: True,  # PublishDedupMaxKeys: ids leave after the window
    ErrorCode.INVALID_REPORT: False,  # a client bug: the same report fails again (ADR 048)
}
HTTP_RETRY: dict[int, bool] = {
    0: True,  # no answer at all
    400: False,
    401: False,
    403: False,
    404: False,
    409: False,
    422: False,
    429: True,
    500: False,
    502: False,  # a member answered with an error (MemberFailure decides by kind)
    503: True,
    504: True,
}
KIND_RULES: dict[str, tuple[str, bool]] = {  # MemberFailure (admin API) and JmxError kinds
    "unreachable": ("member_unreachable", True),
    "timeout": ("member_timeout", True),
    "auth": ("member_auth_failed", False),
    "error": ("member_error", False),
}


def test_every_error_code_has_a_retry_rule() -> None:
    assert set(ERROR_CODE_RETRY) == set(ErrorCode), "decide whether a new code is retryable"
    for code, retry in ERROR_CODE_RETRY.items():
        error = RemoteProtocolError(code, "x")
        assert (error.code, error.retryable) == (code, retry)


@pytest.mark.parametrize(("status", "retry"), HTTP_RETRY.items())
def test_http_status_rules(status: int, retry: bool) -> None:
    assert ProviderError(status, "t").retryable is retry
    if status:
        assert ProblemError(status, "d").retryable is retry


@pytest.mark.parametrize(("kind", "rule"), KIND_RULES.items())
def test_member_and_jmx_kind_rules(kind: str, rule: tuple[str, bool]) -> None:
    code, retry = rule
    member = MemberEndpoint("m1", "http://127.0.0.1:1", "config")
    failure = MemberFailure(member, kind, "x")  # type: ignore[arg-type]
    assert (failure.code, failure.retryable) == (code, retry)
    assert JmxError(kind, "x").retryable is retry
    assert MemberJolokiaError(member, 404, "e", "x").retryable is False


def test_errors_that_reach_the_wire_agree_with_the_wire_rules() -> None:
    # The engine's "no quorum" becomes the engine_unavailable error frame: one rule for both.
    assert EngineUnavailable.code == ErrorCode.ENGINE_UNAVAILABLE
    assert EngineUnavailable.retryable is ERROR_CODE_RETRY[ErrorCode.ENGINE_UNAVAILABLE]
    # Our own protocol bug closes the connection with 1011: client/closecodes.py reconnects.
    assert LocalProtocolError.code == ErrorCode.INTERNAL
    assert LocalProtocolError.close_code == CloseCode.INTERNAL_ERROR
    assert LocalProtocolError.retryable is rule_for_close(LocalProtocolError.close_code).retry
    assert LocalProtocolError.retryable is ERROR_CODE_RETRY[ErrorCode.INTERNAL]
    # ConnectFailed ends connect() after a close code whose rule is "stop": never retryable.
    stop = {code for code in CloseCode if not rule_for_close(code).retry}
    assert stop == {CloseCode.PROTOCOL_ERROR, CloseCode.INVALID_PAYLOAD, CloseCode.TOO_MANY_ERRORS}
    assert ConnectFailed.retryable is False


def test_built_in_bases_stay_for_callers_that_catch_them() -> None:
    from pushgrid.server.monitoring.mbeans import InstanceAlreadyExists, MalformedObjectName
    from pushgrid.spark_stats.locking import StoreBusyError

    assert issubclass(ConnectFailed, ConnectionError)
    assert issubclass(MalformedObjectName, ValueError)
    assert issubclass(InstanceAlreadyExists, ValueError)
    assert issubclass(StoreBusyError, RuntimeError)


def test_the_engine_refuses_in_one_shape() -> None:
    """Every refusal of an engine carries ``code`` (the ErrorCode the client gets) and
    ``reason``: the admission path answers all of them one way (ADR 036)."""
    from pushgrid.server.engine.base import EngineFull, EngineRefusal, SnapshotLimitExceeded

    refusals: list[EngineRefusal] = [
        SnapshotLimitExceeded(ErrorCode.TOO_MANY_FIELDS, "fields"),
        EngineUnavailable("no quorum"),
        EngineFull(ErrorCode.TOO_MANY_SUBJECTS, "full"),
    ]
    shapes = [(type(r.code), r.code, r.reason, str(r)) for r in refusals]
    assert shapes == [
        (ErrorCode, ErrorCode.TOO_MANY_FIELDS, "fields", "fields"),
        (ErrorCode, ErrorCode.ENGINE_UNAVAILABLE, "no quorum", "no quorum"),
        (ErrorCode, ErrorCode.TOO_MANY_SUBJECTS, "full", "full"),
    ]
