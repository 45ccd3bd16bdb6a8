"""rlab's per-user cache and the one way benchmarks build a prepared task folder in it.

A prepared task folder holds ``public/`` (what candidates read, through ``RLAB_DATA_DIR``),
``private/`` (labels, facts: never mounted for a candidate) and ``marker.json`` (what the
build was made from, so a stale or half-written folder is rebuilt). :func:`build_prepared`
writes it the same way for every benchmark: into a ``.partial`` staging folder, marker
last, public files read-only, then one atomic rename over the old folder — so a killed
build never leaves a folder that looks finished.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER = "marker.json"
log = logging.getLogger(__name__)


def cache_home() -> Path:
    """Root of rlab's per-user cache (``RLAB_CACHE_HOME`` or ``~/.cache/rlab``)."""
    if os.environ.get("RLAB_CACHE_HOME"):
        return Path(os.environ["RLAB_CACHE_HOME"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rlab"


def remove_tree(path: Path) -> None:
    """Remove a folder even where a build made parts of it read-only; never follows links."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if path.is_dir() and not path.is_symlink():
        for sub in [path, *path.rglob("*")]:
            if sub.is_dir() and not sub.is_symlink():
                os.chmod(sub, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a finished prepared folder, or ``None`` when there is none (or it is torn)."""
    try:
        marker = json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        marker = None
    if not isinstance(marker, dict):
        log.debug("prepared data: no finished folder at %s (cache miss)", folder)
        return None
    # the benchmark compares the marker with what it would build: a mismatch rebuilds
    shown = json.dumps(marker, default=str)
    log.debug("prepared data: finished folder at %s, marker %.200s", folder, shown)
    return marker


@dataclass
class PreparedBuild:
    """A prepared folder being built: write into :attr:`public` and :attr:`private`, set
    :attr:`marker`; the folder appears at its target only when the ``with`` block ends well."""

    staging: Path
    marker: dict[str, Any] = field(default_factory=dict)
    #: Make the folders under ``public/`` read-only too (its files always are).
    read_only_folders: bool = False

    @property
    def public(self) -> Path:
        return self.staging / "public"

    @property
    def private(self) -> Path:
        return self.staging / "private"


@contextmanager
def build_prepared(target: Path, *, read_only_folders: bool = False) -> Iterator[PreparedBuild]:
    """Build the prepared folder ``target`` atomically.

    Yields a :class:`PreparedBuild` whose ``public/`` and ``private/`` exist and are empty.
    When the block ends without an exception, ``marker.json`` is written from
    ``build.marker``, every file under ``public/`` is made read-only (and its folders too
    with ``read_only_folders``), and the staging folder replaces ``target`` in one rename. On
    an exception the staging folder is removed and ``target`` is left as it was.
    """
    target = Path(target)
    staging = target.with_name(target.name + ".partial")
    started = time.perf_counter()
    log.debug("prepared data: building %s (staging in %s)", target, staging)
    remove_tree(staging)
    build = PreparedBuild(staging, read_only_folders=read_only_folders)
    build.public.mkdir(parents=True)
    build.private.mkdir()
    try:
        yield build
        (staging / MARKER).write_text(json.dumps(build.marker, indent=1, default=str))
        for path in sorted(build.public.rglob("*"), reverse=True):
            if path.is_symlink():
                continue
            if path.is_file():
                if path.stat().st_nlink > 1:
                    continue  # a hard link shares its mode with a source file outside the folder
                os.chmod(path, 0o444)
            elif read_only_folders:
                os.chmod(path, 0o555)
        if read_only_folders:
            os.chmod(build.public, 0o555)
    except BaseException:
        remove_tree(staging)
        raise
    remove_tree(target)
    staging.replace(target)
    log.debug("prepared data: built %s in %.2f s", target, time.perf_counter() - started)
