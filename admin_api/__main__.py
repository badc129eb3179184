"""``python -m admin_api ...``: the ``pushgrid admin`` commands without the ``pushgrid`` CLI."""

from .cli import admin_app

admin_app(prog_name="pushgrid admin")
