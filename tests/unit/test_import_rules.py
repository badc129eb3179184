"""Who may import whom (docs/architecture.md, "Packages"), checked on the source itself.

Every ``import``/``from`` statement counts, including those under ``TYPE_CHECKING`` and inside
functions: a type-only import is still a dependency a reader has to follow. The rules are data;
a new boundary is a new row here and a line in docs/architecture.md.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the installed namespace: pushgrid/ holds the protocol and links to the top-level folders
NAMESPACE = ROOT / "pushgrid"
#: the migrations are the top-level alembic/ folder, linked into the SQL store package
NOT_MODULES = ("metrics/sqlstore/migrations",)


@dataclass(frozen=True)
class Rule:
    """Modules under ``scope`` (minus ``exempt``) may import only ``allowed`` of ours, and never
    ``forbidden`` (a narrower cut inside an allowed package)."""

    scope: str
    allowed: tuple[str, ...]
    why: str
    exempt: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()


#: what every server package may import: itself, the wire protocol, metrics, settings, the kernel
SERVER_BASE = (
    "pushgrid.server",
    "pushgrid.protocol",
    "pushgrid.metrics",
    "pushgrid.config",
    "pushgrid.kernel",
    "pushgrid.ops",
)

RULES = (
    Rule(
        "pushgrid.protocol",
        ("pushgrid.protocol",),
        "the wire protocol and the exception tree: sans-I/O, shared by every part (ADR 020)",
    ),
    Rule("pushgrid.protocol.exceptions", (), "the exception tree imports nothing of ours"),
    Rule(
        "pushgrid.ops",
        ("pushgrid.ops", "pushgrid.protocol"),
        "the typed ops contract (MBean names, attributes, documents; ADR 035): every part may"
        " import it, so it imports only the protocol",
    ),
    Rule(
        "pushgrid.metrics",
        ("pushgrid.metrics", "pushgrid.ops", "pushgrid.protocol.exceptions"),
        "the shared leaf library (ADR 015, ADR 016)",
    ),
    Rule(
        "pushgrid.server",
        SERVER_BASE,
        "the push server never depends on the ops tools (admin API, console, pipeline) nor on the"
        " CLI that wires them: it shares settings and the kernel with them (ADR 034)",
    ),
    Rule(
        "pushgrid.config",
        ("pushgrid.config", "pushgrid.kernel", "pushgrid.protocol"),
        "Settings and their parts: every process reads them, so they depend on no part (ADR 034)",
    ),
    Rule(
        "pushgrid.kernel",
        ("pushgrid.kernel", "pushgrid.protocol.exceptions"),
        "the shared small pieces (addresses, redaction, periodic tasks, throttle, JMX query)"
        " import nothing of ours but the exception tree (ADR 034)",
    ),
    Rule(
        "pushgrid.server.monitoring",
        SERVER_BASE,
        "views take small ports (ports.py), never the app or a connection (ADR 014); they may"
        " use transport.http's request/response helpers",
        forbidden=("pushgrid.server.app", "pushgrid.server.transport.connection"),
    ),
    Rule(
        "pushgrid.server.transport",
        SERVER_BASE,
        "a connection gets a ConnectionContext, never the app (ADR 013)",
        forbidden=("pushgrid.server.app", "pushgrid.server.monitoring"),
    ),
    Rule(
        "pushgrid.server.engine",
        SERVER_BASE,
        "the engine knows nothing of sessions, sockets or views, nor of the wire: it returns"
        " values, the hub and the session frame them (server.core.outgoing, ADR 024)",
        forbidden=(
            "pushgrid.server.app",
            "pushgrid.server.transport",
            "pushgrid.server.monitoring",
            "pushgrid.server.core",
            "pushgrid.server.framing",
            "pushgrid.protocol.codec",
        ),
    ),
    Rule(
        "pushgrid.client",
        ("pushgrid.client", "pushgrid.protocol"),
        "the SDK ships the wire protocol only: it installs and runs without the server",
    ),
    Rule(
        "pushgrid.spark_stats",
        (
            "pushgrid.spark_stats",
            "pushgrid.metrics",
            "pushgrid.protocol.exceptions",
            # the latency buckets and their percentile: one definition at every level (ADR 062)
            "pushgrid.protocol.latency",
            "pushgrid.config",
        ),
        "the pipeline reads archives and writes the SQL store; it never talks to a member",
    ),
    Rule(
        "pushgrid.console",
        (
            "pushgrid.console",
            "pushgrid.ops",
            "pushgrid.metrics.indicators",
            "pushgrid.metrics.window_spec",
            "pushgrid.config",
            "pushgrid.kernel.addresses",
            "pushgrid.protocol.exceptions",
        ),
        "the console talks only to the admin API (names and settings are shared, data is not)",
    ),
    Rule(
        "pushgrid.server.core",
        (
            "pushgrid.server.core",
            "pushgrid.server.engine.base",
            "pushgrid.server.framing",
            "pushgrid.protocol",
            "pushgrid.metrics",
            "pushgrid.kernel",
        ),
        "sessions and the hub see the engine through its interface (engine.base) only",
    ),
    Rule(
        "pushgrid.server.cluster",
        (
            "pushgrid.server.cluster",
            "pushgrid.config",
            "pushgrid.kernel.addresses",
            "pushgrid.kernel.periodic",
            "pushgrid.protocol",
            "pushgrid.metrics.health",
        ),
        "the cluster (topology, NATS node, membership, link) knows nothing of engines, sessions or"
        " views: the cluster engines build on it (engine.cluster_factory), never the reverse;"
        " status computes its health with the one health model (metrics.health, pure)",
    ),
    Rule(
        "pushgrid.admin_api",
        (
            "pushgrid.admin_api",
            "pushgrid.console.mount",
            "pushgrid.console.security",
            "pushgrid.client",
            "pushgrid.metrics",
            "pushgrid.ops",
            "pushgrid.protocol",
            "pushgrid.spark_stats.locking",
            "pushgrid.config",
            "pushgrid.kernel",
        ),
        "the admin API reads members over HTTP and the SQL store and imports nothing of the server:"
        " settings and the kernel (throttle, JMX query, periodic runner, secret redaction) are"
        " shared pieces; of the console its mount and the browser security headers",
    ),
)


def _module_name(path: Path) -> str:
    parts = ["pushgrid", *path.relative_to(NAMESPACE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    drop = node.level - 1 if is_package else node.level
    stem = base[: len(base) - drop]
    return ".".join([*stem, node.module] if node.module else stem)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    module = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, path.name == "__init__.py")
            # ``from pkg import mod`` imports pkg.mod when mod is a module of ours.
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield node.lineno, sub if _is_module(sub) else target


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _ours(name: str) -> bool:
    return name.split(".")[0] == "pushgrid"


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _sources() -> list[Path]:
    """Every module of the namespace, reached as an installed name (through the links)."""
    found = []
    for folder, _dirs, files in os.walk(NAMESPACE, followlinks=True):
        where = Path(folder)
        if where.relative_to(NAMESPACE).as_posix().startswith(NOT_MODULES):
            continue
        found += [where / name for name in files if name.endswith(".py")]
    return sorted(found)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.scope)
def test_imports_follow_the_rule(rule: Rule) -> None:
    broken = []
    for path in _sources():
        module = _module_name(path)
        if not _within(module, rule.scope) or any(_within(module, e) for e in rule.exempt):
            continue
        for line, name in _imports(path):
            if not _ours(name) or name == "pushgrid":  # the namespace root holds __version__ only
                continue
            outside = not any(_within(name, a) for a in rule.allowed)
            if outside or any(_within(name, f) for f in rule.forbidden):
                broken.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert sorted(set(broken)) == [], f"{rule.why}:\n" + "\n".join(broken)


def test_the_rules_see_the_tree() -> None:
    """A rule whose scope matches no module would pass without checking anything."""
    modules = {_module_name(p) for p in _sources()}
    for rule in RULES:
        assert any(_within(m, rule.scope) for m in modules), rule.scope
    assert len(modules) > 150


def test_a_forbidden_import_is_caught(tmp_path: Path) -> None:
    """The checker itself: relative imports resolve to the module they name."""
    node = ast.parse("from ..app import PushServer").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve("pushgrid.server.transport.connection", node, False) == "pushgrid.server.app"
    node = ast.parse("from . import hub").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve("pushgrid.server.core", node, True) == "pushgrid.server.core"


def _node(module: str) -> str:
    """The unit of the cycle check: a subpackage of a part (``pushgrid.server.engine``) or a
    module at a part's top (``pushgrid.config``)."""
    return ".".join(module.split(".")[:3])


def _import_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in _sources():
        here = _node(_module_name(path))
        for _line, name in _imports(path):
            if _ours(name) and name != "pushgrid" and _node(name) != here:
                edges.setdefault(here, set()).add(_node(name))
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


#: the parts of the namespace: the top-level folders and the shared packages under pushgrid/
PARTS = (
    "protocol",
    "config",
    "kernel",
    "ops",
    "cli",
    "server",
    "client",
    "metrics",
    "admin_api",
    "console",
    "spark_stats",
)


def _part(module: str) -> str:
    """The part a module belongs to: ``pushgrid.server.engine.base`` -> ``pushgrid.server``;
    ``python -m pushgrid`` (``pushgrid/__main__.py``) is the CLI's entry point."""
    part = ".".join(module.split(".")[:2])
    return "pushgrid.cli" if part == "pushgrid.__main__" else part


def test_no_part_imports_another_back() -> None:
    """Between parts, arrows run one way: only ``pushgrid.cli`` imports every part, and no part
    imports the CLI (the cycle {server, admin_api, console, spark_stats} that the CLI inside the
    server made is what this test forbids, ADR 034)."""
    edges: dict[str, set[str]] = {}
    for path in _sources():
        here = _part(_module_name(path))
        for _line, name in _imports(path):
            if _ours(name) and name != "pushgrid" and _part(name) != here:
                edges.setdefault(here, set()).add(_part(name))
    assert _cycles(edges) == []
    assert {p.split(".")[1] for p in edges} <= set(PARTS)
    assert not [p for p, targets in edges.items() if "pushgrid.cli" in targets]


def test_imports_are_written_one_way() -> None:
    """Inside a part, relative imports; across parts, the absolute ``pushgrid.<part>`` name
    (docs/architecture.md "Imports"). A reader then sees at the top of a file which parts it
    leans on."""
    wrong = []
    for path in _sources():
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                if _ours(node.module) and _part(node.module) == _part(module):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} absolute {node.module}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if _ours(alias.name) and _part(alias.name) == _part(module):
                        wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} import {alias.name}")
    assert wrong == []


def test_no_package_imports_itself_back() -> None:
    """Every import statement counts (lazy ones too): a cycle hidden in a function is still one."""
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
