"""``python -m console --api URL``: the console on its own (see console.cli)."""

from .cli import main

main()
