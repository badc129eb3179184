"""The ``pushgrid`` command's entry point: a server command re-executes itself on its memory
allocator (pushgrid/cli/allocator.py) before the command line's modules are imported, so the
re-execution costs a bare interpreter start; then the command line runs."""

from __future__ import annotations

import sys

from .allocator import reexec_early


def main() -> None:
    reexec_early(sys.argv[1:])
    from .main import main as run

    run()
