"""How a candidate's files travel between rlab and a Ray worker.

Source and outputs go through the object store as uncompressed tar archives held in
memory; only regular files and folders travel (a link, device or FIFO is left behind and
named), and unpacking refuses absolute names and ``..``, so a candidate cannot make the
driver write outside its output folder. The sanitized data and the run's cache are read
in place: they must be on a filesystem the worker sees at the same path, which
:func:`data_fingerprint` lets the worker check.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

Fingerprint = tuple[tuple[str, int], ...]


def pack_folder(folder: Path) -> tuple[bytes, list[str]]:
    """A tar archive of ``folder``'s regular files and folders; and what was left out."""
    buffer = io.BytesIO()
    skipped: list[str] = []
    root = Path(folder)
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for current, dirs, files in os.walk(root, followlinks=False):
            base = Path(current)
            for name in sorted(dirs):
                path = base / name
                rel = path.relative_to(root).as_posix()
                if path.is_symlink():
                    skipped.append(rel)
                else:
                    archive.add(path, arcname=rel, recursive=False)
            dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())
            for name in sorted(files):
                path = base / name
                rel = path.relative_to(root).as_posix()
                if path.is_symlink() or not path.is_file():
                    skipped.append(rel)
                    continue
                archive.add(path, arcname=rel, recursive=False)
    return buffer.getvalue(), skipped


def _safe_name(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts


def unpack_folder(data: bytes, dest: Path) -> None:
    """Unpack an archive of :func:`pack_folder` into ``dest`` (created if missing)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        members = []
        for member in archive.getmembers():
            if not _safe_name(member.name) or not (member.isfile() or member.isdir()):
                raise ValueError(f"refusing archive member {member.name!r}")
            members.append(member)
        if hasattr(tarfile, "data_filter"):
            archive.extractall(dest, members=members, filter="data")
        else:  # Python < 3.11.4: the checks above already admit only plain, relative entries
            archive.extractall(dest, members=members)


def relocate_env(env: Mapping[str, str], moves: Mapping[str, str]) -> dict[str, str]:
    """``env`` with every value naming a moved folder (or a path below it) rewritten."""
    out: dict[str, str] = {}
    for key, value in env.items():
        for old, new in moves.items():
            if value == old or value.startswith(old.rstrip("/") + "/"):
                value = new + value[len(old.rstrip("/")) :]
                break
        out[key] = value
    return out


def data_fingerprint(folder: Path) -> Fingerprint:
    """Names and sizes of the files at the top of ``folder``: cheap, and catches a stale copy."""
    entries = []
    with os.scandir(folder) as scan:
        for entry in scan:
            size = entry.stat().st_size if entry.is_file() else -1
            entries.append((entry.name, size))
    return tuple(sorted(entries))
