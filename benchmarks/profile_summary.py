"""Summarise a py-spy ``--format raw`` profile (collapsed stacks): the functions with the most
samples, by own time and by inclusive time, as a Markdown table.

    .venv/bin/python benchmarks/profile_summary.py PROFILE.txt [--top 15]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# py-spy frames look like "flush (server/transport/connection.py:179)"; drop the line number so
# one function is one row.
_LINE = re.compile(r":\d+\)$")


def load(path: Path) -> tuple[Counter[str], Counter[str], int]:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_s = line.rpartition(" ")
        if not stack or not count_s.isdigit():
            continue
        count = int(count_s)
        frames = [_LINE.sub(")", f) for f in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    return own, inclusive, total


def table(counter: Counter[str], total: int, top: int, title: str) -> str:
    rows = [f"| {title} | samples | share |", "| --- | ---: | ---: |"]
    for frame, n in counter.most_common(top):
        rows.append(f"| `{frame}` | {n} | {100 * n / total:.1f}% |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    own, inclusive, total = load(args.profile)
    print(f"{args.profile.name}: {total} samples\n")
    print(table(own, total, args.top, "own time"))
    print()
    print(table(inclusive, total, args.top, "inclusive"))


if __name__ == "__main__":
    main()
