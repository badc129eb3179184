"""The suite's table of its modules' own time (tests/suite_groups.py): longest first, the rest
summed, the total; and the order the modules are handed to the workers in, longest first."""

from __future__ import annotations

from pathlib import Path

from suite_groups import MODULE_SECONDS, longest_first, module_table


def test_longest_first_the_rest_summed_and_the_total() -> None:
    seconds = {"tests/a.py": 1.0, "tests/b.py": 30.0, "tests/c.py": 2.5, "tests/d.py": 0.5}
    lines = module_table(seconds, shown=2)
    assert lines == [
        "    30.0s  tests/b.py",
        "     2.5s  tests/c.py",
        "     1.5s  (2 more modules)",
        "    34.0s  in all (the sum over workers)",
    ]
    assert module_table({"tests/a.py": 1.0}) == [
        "     1.0s  tests/a.py",
        "     1.0s  in all (the sum over workers)",
    ]


def test_modules_are_handed_out_longest_first_known_times_before_kinds() -> None:
    kinds = {"a.py": "other", "b.py": "spark", "c.py": "slow", "d.py": "other", "e.py": "other"}
    seconds = {"d.py": 300.0, "e.py": 55.0, "a.py": 1.0}
    # d (300 s), spark b (60 s by kind), e (55 s), slow c (50 s by kind), a (1 s)
    assert longest_first(kinds, seconds) == ["d.py", "b.py", "e.py", "c.py", "a.py"]
    # without figures: by kind, then the files' order
    plain = {"a.py": "other", "b.py": "slow", "c.py": "other", "d.py": "spark"}
    assert longest_first(plain, {}) == ["d.py", "b.py", "a.py", "c.py"]


def test_the_listed_modules_exist() -> None:
    """A renamed or removed module would silently lose its place in the order."""
    root = Path(__file__).resolve().parents[2]
    assert [m for m in MODULE_SECONDS if not (root / m).is_file()] == []
