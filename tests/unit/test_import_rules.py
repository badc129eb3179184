"""Who may import whom (docs/architecture.md, "Packages"), checked on the source itself.

Every ``import``/``from`` statement counts, including those under ``TYPE_CHECKING`` and inside
functions: a type-only import is still a dependency a reader has to follow. The rules are data;
a new boundary is a new row here and a line in docs/architecture.md.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("server", "client", "metrics", "admin_api", "console", "spark_stats")


@dataclass(frozen=True)
class Rule:
    """Modules under ``scope`` (minus ``exempt``) may import only ``allowed`` of ours, and never
    ``forbidden`` (a narrower cut inside an allowed package)."""

    scope: str
    allowed: tuple[str, ...]
    why: str
    exempt: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()


RULES = (
    Rule("server.protocol", ("server.protocol", "server.errors"), "sans-I/O, the leaf of server"),
    Rule("server.errors", (), "the exception tree imports nothing of ours"),
    Rule("metrics", ("metrics", "server.errors"), "the shared leaf library (ADR 015, ADR 016)"),
    Rule(
        "server",
        ("server", "metrics"),
        "the push server never depends on the ops tools; only the CLI registers their commands",
        exempt=("server.cli",),
    ),
    Rule(
        "server.monitoring",
        ("server", "metrics"),
        "views take small ports (ports.py), never the app or a connection (ADR 014); they may"
        " use transport.http's request/response helpers",
        forbidden=("server.app", "server.transport.connection"),
    ),
    Rule(
        "server.transport",
        ("server", "metrics"),
        "a connection gets a ConnectionContext, never the app (ADR 013)",
        forbidden=("server.app", "server.monitoring"),
    ),
    Rule(
        "server.engine",
        ("server", "metrics"),
        "the engine knows nothing of sessions, sockets or views",
        forbidden=("server.app", "server.transport", "server.monitoring", "server.core"),
    ),
    Rule(
        "client",
        ("client", "server.protocol", "server.errors"),
        "the SDK ships the wire protocol only",
        exempt=("client.cli",),
    ),
    Rule(
        "spark_stats",
        ("spark_stats", "metrics", "server.errors", "server.config", "server.cli_support"),
        "the pipeline reads archives and writes the SQL store; it never talks to a member",
    ),
    Rule(
        "console",
        ("console", "metrics.indicators", "metrics.window_spec", "server.config", "server.errors"),
        "the console talks only to the admin API (names and settings are shared, data is not)",
    ),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
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
    return name.split(".")[0] in PACKAGES


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.scope)
def test_imports_follow_the_rule(rule: Rule) -> None:
    broken = []
    for path in _sources():
        module = _module_name(path)
        if not _within(module, rule.scope) or any(_within(module, e) for e in rule.exempt):
            continue
        for line, name in _imports(path):
            if not _ours(name):
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
    assert _resolve("server.transport.connection", node, False) == "server.app"
    node = ast.parse("from . import hub").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve("server.core", node, True) == "server.core"
