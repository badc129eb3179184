"""Comments, docstrings and docs name our modules by path (``server/core/hub.py``) or dotted
(``pushgrid.server.core.hub.Hub``): every name must still lead to a module, so a move leaves no
stale pointer behind (issue 30 named eight). ADRs are history and keep the names of their day;
benchmark results are recorded output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the parts of the pushgrid namespace: pushgrid.<part> lives in <part>/ or pushgrid/<part>/
PARTS = ("server", "client", "admin_api", "console", "metrics", "spark_stats")
SKIP = ("docs/adr/", "benchmarks/results/", ".venv/", "build/", "node_modules/")
SOURCES = ("*.py", "*.md", "*.js")

_PARTS = "|".join(PARTS)
PATH_REF = re.compile(rf"(?<![\w/.-])((?:pushgrid/)?(?:{_PARTS}|pushgrid)/[\w/]+\.py)\b")
#: dotted names: any ``pushgrid.<part>.…``; a bare ``<part>.a.b`` only quoted (`…`, Sphinx
#: ``~…`` or ``<…>``), where it cannot be a variable's attribute (``server.port``)
DOTTED_REF = re.compile(
    rf"(?<![\w.])(pushgrid\.(?:{_PARTS})(?:\.\w+)+)|(?<=[`~<])((?:{_PARTS})(?:\.\w+){{2,}})"
)


def _files() -> list[Path]:
    found: list[Path] = []
    for pattern in SOURCES:
        for path in ROOT.rglob(pattern):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(SKIP) and path != Path(__file__).resolve():
                found.append(path)
    return sorted(found)


def _package_dir(part: str) -> Path | None:
    for candidate in (ROOT / part, ROOT / "pushgrid" / part):
        if candidate.is_dir():
            return candidate
    return None


def _resolves(dotted: str) -> bool:
    """``a.b.c.Name`` names a module when its first two components are a package and a module
    (or package) in it; what follows may be attributes."""
    names = dotted.removeprefix("pushgrid.").split(".")
    base = _package_dir(names[0])
    if base is None or len(names) < 2:
        return True  # not one of ours, or the part alone
    if names[1][0].isupper() or names[1].startswith("_"):
        return True  # a class or a dunder of the package itself
    return (base / f"{names[1]}.py").is_file() or (base / names[1]).is_dir()


def _path_exists(path: str) -> bool:
    return (
        (ROOT / path).is_file()
        or (ROOT / "pushgrid" / path).is_file()
        or (ROOT / path.removeprefix("pushgrid/")).is_file()
    )


def _stale(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    stale = [ref for ref in PATH_REF.findall(text) if not _path_exists(ref)]
    dotted = [a or b for a, b in DOTTED_REF.findall(text)]
    stale += [ref for ref in dotted if not _resolves(ref)]
    return stale


def test_the_scan_sees_the_references() -> None:
    """The patterns find both kinds (a scan that finds nothing passes vacuously)."""
    assert PATH_REF.findall("see server/core/hub.py and pushgrid/protocol/codec.py")
    found = DOTTED_REF.findall("`pushgrid.server.core.hub.Hub`, ~server.protocol.outframe.X")
    assert found == [("pushgrid.server.core.hub.Hub", ""), ("", "server.protocol.outframe.X")]
    assert DOTTED_REF.findall("server.port and client.publish(...)") == []
    assert not _resolves("server.protocol.outframe.OutFrame")
    assert not _path_exists("server/errors.py")


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_module_reference_leads_to_a_module(path: Path) -> None:
    assert _stale(path) == []
