"""One meaning per name (issue 30 item 4, ADR 045): no class name is defined in two modules of
ours. ``Member`` meant four things (cluster topology, RRD, the admin API's directory, the
console's card); a reader following a name now lands on one definition."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = (
    "server",
    "admin_api",
    "console",
    "metrics",
    "spark_stats",
    "client",
    "pushgrid/protocol",
    "pushgrid/config",
    "pushgrid/kernel",
    "pushgrid/cli",
    "pushgrid/ops",
)


def class_homes() -> dict[str, list[str]]:
    homes: dict[str, list[str]] = defaultdict(list)
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    homes[node.name].append(str(path.relative_to(ROOT)))
    return homes


def test_no_class_name_has_two_homes() -> None:
    shared = {name: where for name, where in class_homes().items() if len(where) > 1}
    assert shared == {}


def test_the_walk_sees_the_tree() -> None:
    homes = class_homes()
    assert len(homes) > 300
    assert homes["Hub"] == ["server/core/hub.py"]
