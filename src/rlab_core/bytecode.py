"""Compiled bytecode for the packages candidates import, once per change of the environment.

Candidates import pandas, scikit-learn, LightGBM … from the run's interpreter, inside a
sandbox where that environment is read-only: Python cannot write the ``.pyc`` files it
compiles there, so an environment installed without them (uv's default; rlab does not ask
uv to compile, because uv then re-checks every file on every ``uv run``) would compile
them again at every candidate start — about 4 s per start with those three packages. The
run compiles the environment's site-packages itself before its first candidate, and only
when the environment changed since it last did: a marker file keeps the folders'
modification times, which change whenever a package is installed or removed.
"""

from __future__ import annotations

import compileall
import json
import logging
import os
import sysconfig
import time
from pathlib import Path

log = logging.getLogger(__name__)

MARKER = ".rlab-bytecode.json"


def site_folders() -> list[Path]:
    """The interpreter's site-packages folders (pure and platform), existing ones once each."""
    paths = sysconfig.get_paths()
    found: list[Path] = []
    for key in ("purelib", "platlib"):
        path = Path(paths[key])
        if path.is_dir() and path not in found:
            found.append(path)
    return found


def _stamp(folders: list[Path]) -> str:
    return json.dumps({str(f): f.stat().st_mtime_ns for f in folders}, sort_keys=True)


def ensure_bytecode(folders: list[Path] | None = None) -> float | None:
    """Compile ``folders`` (default: site-packages) unless unchanged since the last time.

    Returns the seconds spent, or ``None`` when nothing was done (unchanged, or a folder
    this process cannot write — a system interpreter: its packages ship compiled). Never
    raises: a failed compile only costs candidates their start-up time.
    """
    folders = site_folders() if folders is None else folders
    if not folders or not all(os.access(f, os.W_OK) for f in folders):
        return None
    marker = folders[0] / MARKER
    try:
        stamp = _stamp(folders)
        if marker.is_file() and not marker.is_symlink() and marker.read_text() == stamp:
            return None
        started = time.perf_counter()
        for folder in folders:
            compileall.compile_dir(folder, quiet=2, workers=0)
        # the marker exists before the stamp is read, so writing it changes no folder's time
        marker.touch()
        marker.write_text(_stamp(folders))
    except OSError:
        log.debug("compiling the environment's bytecode failed", exc_info=True)
        return None
    seconds = time.perf_counter() - started
    log.debug("compiled the bytecode of %s in %.1f s", ", ".join(map(str, folders)), seconds)
    return seconds
