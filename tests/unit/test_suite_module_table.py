"""The suite's table of its modules' own time (tests/suite_groups.py): longest first, the rest
summed, the total."""

from __future__ import annotations

from suite_groups import module_table


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
