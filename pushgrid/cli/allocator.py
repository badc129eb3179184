"""The push server's memory allocator (``Allocator`` key; docs/adr/033-jemalloc-by-default.md).

CPython's allocator (pymalloc) keeps most of a flood of one-shot subjects' memory after they are
evicted: its 1 MiB arenas go back to the OS only when every object in them is freed, and a few
survivors pin each one. jemalloc serves the interpreter's objects instead (``PYTHONMALLOC=malloc``
sends every allocation to the C allocator, ``LD_PRELOAD`` makes that jemalloc) and returns freed
pages by itself. Both variables are read when a process starts, so ``pushgrid server`` and
``pushgrid up`` re-execute themselves once with them set (same PID: systemd, containers and
supervisors see one process). The re-executed process removes what it added from its own
environment, so its children (nats-server, admin API, other members) start clean and choose for
themselves.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

Allocator = Literal["jemalloc", "malloc", "pymalloc"]
_CHOICES: dict[str, Allocator] = {
    "jemalloc": "jemalloc",
    "malloc": "malloc",
    "pymalloc": "pymalloc",
}

#: set in the re-executed process: the variables it was given (comma-separated), to remove;
#: not PUSHGRID_..., which names a setting
MARKER = "_PUSHGRID_ALLOCATOR_SET"
#: the operator's own choice: left as it is when either is already in the environment
OWN_CHOICE = ("PYTHONMALLOC", "LD_PRELOAD")
#: where Debian's libjemalloc2 puts the library (find_library is the fallback)
JEMALLOC_PATHS = (
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/libjemalloc.so.2",
    "/usr/local/lib/libjemalloc.so.2",
)
#: what to install when jemalloc is wanted and missing
JEMALLOC_PACKAGE = "libjemalloc2"
#: jemalloc's options for a push server (``MALLOC_CONF``; an operator's own wins; ADR 041): one
#: arena (the event loop is one thread, its few workers share it), and thread caches with more
#: slots that are collected after every MiB allocated instead of every 64 KiB, so the fan-out's
#: churn of small objects (ints, outbox arrays, joined frames) stays in the cache instead of
#: going back to the arena. Measured: the write path's own CPU per delivery 1.24-1.33x
#: pymalloc's with jemalloc's defaults, 1.08-1.15x with these; the flood's memory still goes back.
JEMALLOC_CONF = (
    "narenas:1,tcache_nslots_small_max:1024,lg_tcache_nslots_mul:2,tcache_gc_incr_bytes:1048576"
)


def find_jemalloc() -> str | None:
    """The jemalloc shared library's path or name, or None when it is not installed."""
    for path in JEMALLOC_PATHS:
        if Path(path).is_file():
            return path
    return ctypes.util.find_library("jemalloc")


def variables_for(choice: Allocator, jemalloc: str | None) -> dict[str, str]:
    """The variables that make a new interpreter run on ``choice`` (empty: as it is).

    jemalloc when its library is missing falls back to the C library's allocator, which also
    returns a flood's memory (``server/engine/trim.py`` trims it) at more CPU per message."""
    if choice == "pymalloc":
        return {}
    if choice == "jemalloc" and jemalloc is not None:
        return {"PYTHONMALLOC": "malloc", "LD_PRELOAD": jemalloc, "MALLOC_CONF": JEMALLOC_CONF}
    return {"PYTHONMALLOC": "malloc"}


def reexec_environment(
    choice: Allocator, environ: Mapping[str, str], jemalloc: str | None
) -> dict[str, str] | None:
    """The environment to re-execute this process with, or None to go on as it is: already
    re-executed, the interpreter's default wanted, or the operator set the variables (an
    operator's ``MALLOC_CONF`` is kept: jemalloc's options are theirs to choose too)."""
    if MARKER in environ or any(name in environ for name in OWN_CHOICE):
        return None
    added = {k: v for k, v in variables_for(choice, jemalloc).items() if k not in environ}
    if not added:
        return None
    return {**environ, **added, MARKER: ",".join(added)}


def running_allocator(environ: Mapping[str, str]) -> str:
    """What this process runs on, as its start-up environment says."""
    preload = environ.get("LD_PRELOAD", "")
    if environ.get("PYTHONMALLOC", "").startswith("malloc"):
        return "jemalloc" if "jemalloc" in preload else "malloc"
    return "pymalloc" + (f" (LD_PRELOAD={preload})" if preload else "")


#: the commands that run a push server
SERVER_COMMANDS = ("server", "up")
_ALLOCATOR_LINE = re.compile(r"^\s*allocator\s*=\s*(\w+)\s*$", re.IGNORECASE | re.MULTILINE)


def early_choice(args: list[str], environ: Mapping[str, str]) -> Allocator | None:
    """The ``Allocator`` a ``pushgrid server``/``up`` command line asks for, read before the
    settings are (so the re-execution costs no import); None for other commands or a value the
    settings will refuse. The validated settings decide again in :func:`apply`."""
    if not args or args[0] not in SERVER_COMMANDS:
        return None
    value = environ.get("PUSHGRID_ALLOCATOR")
    if value is None:
        value = "jemalloc"
        for index, arg in enumerate(args):
            path = args[index + 1] if arg in ("--config", "-c") and index + 1 < len(args) else None
            path = arg.removeprefix("--config=") if arg.startswith("--config=") else path
            if path is not None:
                try:
                    found = _ALLOCATOR_LINE.search(Path(path).read_text("utf-8"))
                except (OSError, UnicodeDecodeError):
                    return None  # the settings will say what is wrong with the file
                value = found.group(1).lower() if found else value
    return _CHOICES.get(value)


def reexec_early(args: list[str]) -> None:
    """Re-execute a server command on its allocator before anything is imported (no return)."""
    choice = early_choice(args, os.environ)
    if choice is not None:
        _reexec(choice)


def _reexec(choice: Allocator) -> None:
    jemalloc = find_jemalloc() if choice == "jemalloc" else None
    new_environment = reexec_environment(choice, os.environ, jemalloc)
    if new_environment is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        # our own interpreter and arguments again, only the environment differs: no shell,
        # nothing from outside the process (ADR 033)
        os.execve(sys.executable, sys.orig_argv, new_environment)  # nosec B606


def apply(choice: Allocator) -> None:
    """Re-execute the running command on ``choice`` (no return), or tidy the environment of a
    re-executed one and log what it runs on."""
    _reexec(choice)
    environ = os.environ
    running = running_allocator(environ)
    if running == "jemalloc" and environ.get("MALLOC_CONF"):
        running += f" (MALLOC_CONF={environ['MALLOC_CONF']})"
    for name in filter(None, environ.pop(MARKER, "").split(",")):
        environ.pop(name, None)  # the children choose for themselves
    if choice == "jemalloc" and not running.startswith("jemalloc") and find_jemalloc() is None:
        log.warning(
            "Allocator = jemalloc but its library is not installed (Debian: apt-get install %s):"
            " running on %s, which returns less memory after a flood of subjects or costs more"
            " CPU (docs/security.md, 'Subject memory')",
            JEMALLOC_PACKAGE,
            running,
        )
    else:
        log.info("memory allocator: %s", running)
