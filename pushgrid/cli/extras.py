"""Which optional extra of the distribution brings each optional module (pyproject.toml).

``pip install pushgrid`` is a push-server node with the clients and the CLI; the ops stack comes
in extras (ADR 020). A command that needs a missing extra stops with exit 2 and names the extra
to install, instead of a traceback. The table is data: a new optional dependency is a new row.
"""

from __future__ import annotations

import importlib.util
from typing import Final

#: import name -> the extra that installs it (the first of several that do)
EXTRA_OF_MODULE: Final[dict[str, str]] = {
    "fastapi": "admin",
    "uvicorn": "admin",
    "dash": "admin",
    "plotly": "admin",
    "a2wsgi": "admin",
    "jmxquery": "admin",
    "sqlalchemy": "admin",
    "alembic": "admin",
    "psycopg": "admin",
    "pandas": "stats",
    "pyspark": "stats",
    "pyarrow": "stats",
    "numpy": "stats",
}

#: command group -> the extra of its role (a stats run that misses SQLAlchemy needs [stats],
#: though [admin] would bring SQLAlchemy too)
EXTRA_OF_COMMAND: Final[dict[str, str]] = {
    "admin": "admin",
    "console": "admin",
    "jmx": "admin",
    "db": "admin",
    "stats": "stats",
}

#: what each role needs at run time, checked before a long-running command starts
MODULES_OF_EXTRA: Final[dict[str, tuple[str, ...]]] = {
    "admin": ("fastapi", "uvicorn", "dash", "plotly", "a2wsgi", "sqlalchemy", "alembic"),
    "stats": ("pyspark", "pandas", "pyarrow", "numpy", "sqlalchemy", "alembic"),
}


def extra_for(module: str | None, argv: list[str]) -> str | None:
    """The extra to install when ``module`` is missing under the command line ``argv``: the
    extra of the command's role, else the one that brings the module; None when ``module`` is
    not an optional dependency (a real bug, to be shown as such)."""
    if not module or module.split(".")[0] not in EXTRA_OF_MODULE:
        return None
    command = next((word for word in argv if not word.startswith("-")), "")
    return EXTRA_OF_COMMAND.get(command, EXTRA_OF_MODULE[module.split(".")[0]])


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    return [name for name in MODULES_OF_EXTRA[extra] if importlib.util.find_spec(name) is None]


def install_hint(extra: str, module: str) -> str:
    """The one line a command prints when ``module`` (from ``extra``) is missing."""
    return (
        f"this command needs the '{extra}' extra ({module} is not installed): "
        f"pip install 'pushgrid[{extra}]'"
    )
