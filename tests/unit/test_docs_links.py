"""Every link in the repository's markdown stays inside the repository and resolves.

A clone holds only this repository: a link to `../shared/...`, to `/home/...` or to a file that
was moved away is dead for every reader. The check covers every markdown file of the tree
(README.md, docs/, benchmarks/, deploy/, ...) and every kind of link a renderer follows: inline
links and images, reference definitions and HTML `href` / `src`. Web addresses (`https:`,
`mailto:`) are not checked; `file:` addresses are refused. A `#fragment` must name a heading (or
an explicit `id` / `name`) of the target markdown file, with GitHub's anchor rules.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Folders that are not part of the repository's own text (tools, caches, installed packages).
_SKIP_DIRS = {"node_modules", "build", "dist", "__pycache__", "data"}

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_INLINE = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # [text], one level of nested brackets
    r"\(\s*(<[^>]*>|[^\s)]+)(?:\s+[\"'(][^)]*)?\s*\)"  # (target "optional title")
)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_HTML = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_HTML_ANCHOR = re.compile(r"""<[^>]+\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def markdown_files() -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and d not in _SKIP_DIRS and not d.endswith(".egg-info")
        )
        found.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".md"))
    return found


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines outside fenced code blocks."""
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
            continue
        yield number, line


def links(text: str) -> Iterator[tuple[int, str]]:
    for number, line in _prose_lines(text):
        prose = _CODE_SPAN.sub("``", line)  # a code span shows a link, it is not one
        for pattern in (_INLINE, _REFERENCE, _HTML):
            for match in pattern.finditer(prose):
                target = match.group(1)
                if target.startswith("<") and target.endswith(">"):
                    target = target[1:-1]
                yield number, target.strip()


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation out, spaces -> '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in _prose_lines(text):
        found.update(_HTML_ANCHOR.findall(_CODE_SPAN.sub("``", line)))
        heading = _HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def problem(source: Path, target: str) -> str | None:
    """Why `target` (a link in `source`) is dead or leaves the repository, or None."""
    scheme = _SCHEME.match(target)
    if scheme is not None:
        if scheme.group(1).lower() == "file":
            return "a file: address (outside the repository)"
        return None  # a web address: not this test's business
    path_part, _, fragment = target.partition("#")
    path_part = unquote(path_part)
    if path_part.startswith(("/", "~", "\\")):
        return "an absolute path (outside the repository)"
    if path_part:
        resolved = Path(os.path.normpath(source.parent / path_part))
        if resolved != ROOT and ROOT not in resolved.parents:
            return "a path outside the repository"
        if not resolved.exists():
            return "no such file in the repository"
    else:
        resolved = source
    if (
        fragment
        and resolved.suffix == ".md"
        and resolved.is_file()
        and unquote(fragment) not in anchors(resolved.read_text(encoding="utf-8"))
    ):
        return f"no heading #{fragment} in {resolved.relative_to(ROOT)}"
    return None


def test_markdown_files_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in markdown_files()}
    assert {"README.md", "docs/benchmarks.md", "benchmarks/NOTES.md"} <= names
    assert not any(n.startswith(".venv/") for n in names)


def test_no_markdown_link_leaves_the_repository_or_is_dead() -> None:
    dead = [
        f"{path.relative_to(ROOT)}:{number}: {target} ({why})"
        for path in markdown_files()
        for number, target in links(path.read_text(encoding="utf-8"))
        if (why := problem(path, target)) is not None
    ]
    assert dead == []


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("../../shared/ARCHITECTURE.md", "a path outside the repository"),
        ("../shared/ARCHITECTURE.md", "no such file in the repository"),  # a clone has no shared/
        ("/work/shared/REFERENCE.md", "an absolute path (outside the repository)"),
        ("file:///etc/hosts", "a file: address (outside the repository)"),
        ("missing.md", "no such file in the repository"),
        ("benchmarks.md#no-such-heading", "no heading #no-such-heading in docs/benchmarks.md"),
        ("benchmarks.md", None),
        ("../benchmarks/NOTES.md", None),
        ("adr/", None),
        ("https://datatracker.ietf.org/doc/html/rfc6455", None),
        ("#how-to-reproduce", None),
    ],
)
def test_the_check_refuses_what_leaves_or_is_dead(target: str, expected: str | None) -> None:
    assert problem(ROOT / "docs" / "benchmarks.md", target) == expected


def test_links_are_read_like_a_renderer() -> None:
    text = "\n".join(
        [
            '[a](one.md) and ![img](img/x.png "title") and [`code`](two.md#sec)',
            "`[not](a-link.md)` in code",
            "```",
            "[not](in-a-fence.md)",
            "```",
            "[ref]: <three.md>",
            '<a href="four.md">four</a>',
        ]
    )
    assert [t for _, t in links(text)] == [
        "one.md",
        "img/x.png",
        "two.md#sec",
        "three.md",
        "four.md",
    ]


def test_slugs_follow_github() -> None:
    assert slug("Batching (spec 5.6): `benchmarks/batching.py`") == (
        "batching-spec-56-benchmarksbatchingpy"
    )
    assert slug("A latency probe for the paced load (2026-11-24 08:23 UTC, `--probe`)") == (
        "a-latency-probe-for-the-paced-load-2026-11-24-0823-utc---probe"
    )
    assert anchors("# Results\n## Results\n") == {"results", "results-1"}
