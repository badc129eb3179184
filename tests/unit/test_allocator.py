"""Which allocator `pushgrid server` re-executes itself on (pushgrid/cli/allocator.py, ADR 033)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pushgrid.cli.allocator import (
    JEMALLOC_CONF,
    MARKER,
    early_choice,
    reexec_environment,
    running_allocator,
    variables_for,
)
from pushgrid.config import load_settings

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
PLAIN = {"PATH": "/usr/bin", "HOME": "/var/lib/pushgrid"}


def test_the_default_is_jemalloc_serving_every_python_object() -> None:
    assert load_settings(None, environ={}).server.allocator == "jemalloc"
    env = reexec_environment("jemalloc", PLAIN, JEMALLOC)
    assert env == {
        **PLAIN,
        "PYTHONMALLOC": "malloc",
        "LD_PRELOAD": JEMALLOC,
        "MALLOC_CONF": JEMALLOC_CONF,
        MARKER: "PYTHONMALLOC,LD_PRELOAD,MALLOC_CONF",
    }
    assert running_allocator(env) == "jemalloc"


def test_jemalloc_runs_with_the_measured_options_unless_the_operator_set_their_own() -> None:
    """ADR 041: one arena and larger, less often collected thread caches (the write path's
    CPU); an operator's MALLOC_CONF is theirs and stays, and is not removed after start."""
    assert JEMALLOC_CONF.split(",") == [
        "narenas:1",
        "tcache_nslots_small_max:1024",
        "lg_tcache_nslots_mul:2",
        "tcache_gc_incr_bytes:1048576",
    ]
    own = {**PLAIN, "MALLOC_CONF": "narenas:4"}
    env = reexec_environment("jemalloc", own, JEMALLOC)
    assert env is not None
    assert env["MALLOC_CONF"] == "narenas:4"
    assert env[MARKER] == "PYTHONMALLOC,LD_PRELOAD"


def test_without_the_jemalloc_library_the_c_allocator_still_gives_memory_back() -> None:
    assert variables_for("jemalloc", None) == {"PYTHONMALLOC": "malloc"}
    env = reexec_environment("jemalloc", PLAIN, None)
    assert env is not None
    assert "LD_PRELOAD" not in env
    assert running_allocator(env) == "malloc"


@pytest.mark.parametrize(
    "environ",
    [
        {**PLAIN, MARKER: "PYTHONMALLOC"},  # already re-executed: never a second time
        {**PLAIN, "PYTHONMALLOC": "pymalloc"},  # the operator's own choice wins
        {**PLAIN, "LD_PRELOAD": "/opt/tcmalloc.so"},
    ],
)
def test_the_process_goes_on_as_it_is(environ: dict[str, str]) -> None:
    assert reexec_environment("jemalloc", environ, JEMALLOC) is None


def test_pymalloc_is_the_interpreters_own() -> None:
    assert reexec_environment("pymalloc", PLAIN, JEMALLOC) is None
    assert running_allocator(PLAIN) == "pymalloc"
    assert reexec_environment("malloc", PLAIN, JEMALLOC) == {
        **PLAIN,
        "PYTHONMALLOC": "malloc",
        MARKER: "PYTHONMALLOC",
    }


def test_a_wrong_value_is_a_configuration_error() -> None:
    with pytest.raises(Exception, match="Allocator"):
        load_settings(None, environ={"PUSHGRID_ALLOCATOR": "tcmalloc"})


def test_the_choice_is_read_before_the_settings_for_server_commands_only(tmp_path: Path) -> None:
    conf = tmp_path / "pushgrid.conf"
    conf.write_text("Listen = 127.0.0.1:8800\n  allocator =  PyMalloc \n")
    assert early_choice(["server", "--config", str(conf)], PLAIN) == "pymalloc"
    assert early_choice(["up", f"--config={conf}"], PLAIN) == "pymalloc"
    assert early_choice(["server", "-c", str(conf)], {"PUSHGRID_ALLOCATOR": "malloc"}) == "malloc"
    assert early_choice(["server"], PLAIN) == "jemalloc"
    assert early_choice(["publish", "/a", "1"], PLAIN) is None
    assert early_choice([], PLAIN) is None
    # left to the settings, which name the file, line or variable
    assert early_choice(["server", "--config", str(tmp_path / "missing.conf")], PLAIN) is None
    assert early_choice(["server"], {"PUSHGRID_ALLOCATOR": "tcmalloc"}) is None
