"""Which extra a command names when an optional module is missing (pushgrid/cli/extras.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from pushgrid.cli.extras import EXTRA_OF_MODULE, MODULES_OF_EXTRA, extra_for, install_hint

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("module", "argv", "extra"),
    [
        ("sqlalchemy", ["stats", "run"], "stats"),
        ("sqlalchemy.orm", ["admin", "serve", "--config", "x"], "admin"),
        ("pyspark", ["--help"], "stats"),
        ("dash", ["console"], "admin"),
        ("fastapi", ["up"], "admin"),
        ("not_ours", ["admin"], None),
        (None, ["admin"], None),
    ],
)
def test_extra_for(module: str | None, argv: list[str], extra: str | None) -> None:
    assert extra_for(module, argv) == extra


def names(requirements: list[str]) -> set[str]:
    """The distribution names of ``requirements`` (the self-reference of [all] left out)."""
    found = {Requirement(text).name.lower() for text in requirements}
    return found - {"pushgrid"}


def test_the_table_agrees_with_pyproject() -> None:
    """Every module the table names is a dependency of the extra it names, never of the base."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    base = names(project["dependencies"])
    for module, extra in EXTRA_OF_MODULE.items():
        dist = module
        assert dist in names(extras[extra]), (module, extra)
        assert dist not in base, module
    for extra, modules in MODULES_OF_EXTRA.items():
        assert set(modules) <= names(extras[extra]), extra


def test_the_hint_is_one_command() -> None:
    assert install_hint("stats", "pyspark").endswith("pip install 'pushgrid[stats]'")
