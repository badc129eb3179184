"""The ``pushgrid`` command: its launcher (the allocator's re-exec) and the Typer application that
registers every part's commands. The only package that imports every part."""
