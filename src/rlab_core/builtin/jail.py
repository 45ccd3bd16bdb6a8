"""Isolation for the local sandbox: a bubblewrap jail, a network namespace, or nothing.

The jail shows a candidate only what it needs: the interpreter and system libraries
read-only, its sanitized data read-only, its working, output and cache folders writable, a
private ``/tmp``, no network, and none of the task's hidden paths (raw data, private
labels, the run folder). Levels, strongest first: ``bubblewrap``, ``netns``, ``none``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

LEVELS = ("bubblewrap", "netns", "none")

#: Entries of /etc a Python program needs; secrets such as /etc/shadow stay out.
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl",
    "ca-certificates",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "hosts",
    "mime.types",
    "alternatives",
    "fonts",
    "matplotlibrc",
)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")


def _probe(command: list[str]) -> bool:
    try:
        done = subprocess.run(command, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def bubblewrap_works() -> bool:
    """True when ``bwrap`` exists and can create the namespaces the jail uses."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    return _probe(
        [
            bwrap,
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-net",
            "--unshare-pid",
            "--die-with-parent",
            "true",
        ]
    )


@functools.cache
def netns_prefix() -> tuple[str, ...] | None:
    """The command prefix that runs a program in a fresh network namespace, if any works."""
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    for prefix in ([unshare, "--net"], [unshare, "--net", "--map-root-user"]):
        if _probe([*prefix, "true"]):
            return tuple(prefix)
    return None


def detect_level(requested: str = "auto") -> str:
    """The strongest level available here (or the requested one, if it is available)."""
    available = [
        level
        for level, ok in (
            ("bubblewrap", bubblewrap_works),
            ("netns", lambda: netns_prefix() is not None),
        )
        if ok()
    ] + ["none"]
    if requested == "auto":
        return available[0]
    return requested if requested in available else ""


def python_roots(python: str) -> list[Path]:
    """Folders that hold the candidate interpreter and its libraries."""
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    exe = Path(python)
    roots.add(exe.parent.parent)
    roots.add(Path(os.path.realpath(exe)).parent.parent)
    return sorted(roots)


def _bind_system(args: list[str]) -> None:
    for folder in SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    for entry in ETC_ENTRIES:
        path = Path("/etc") / entry
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]


def inside(path: Path, roots: Iterable[Path]) -> bool:
    """True when ``path`` is one of ``roots`` or lies below one of them."""
    return any(path == r or r in path.parents for r in roots)


def bubblewrap_args(
    *,
    python: str,
    workdir: Path,
    data_dir: Path,
    writable: Iterable[Path],
    hidden: Iterable[Path],
) -> list[str]:
    """The ``bwrap`` command line (without the program) for one candidate."""
    args = [
        shutil.which("bwrap") or "bwrap",
        "--die-with-parent",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "rlab-candidate",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/var/tmp",
    ]
    _bind_system(args)
    mounted: list[Path] = [Path(d) for d in SYSTEM_DIRS]
    for root in python_roots(python):
        if root.is_dir() and not inside(root, mounted):
            args += ["--ro-bind", str(root), str(root)]
            mounted.append(root)
    data_dir = Path(data_dir).resolve()
    args += ["--ro-bind", str(data_dir), str(data_dir)]
    mounted.append(data_dir)
    for folder in (Path(workdir), *writable):
        folder = Path(folder).resolve()
        args += ["--bind", str(folder), str(folder)]
        mounted.append(folder)
    # hide what the task marks private wherever it would otherwise show through a mount
    for path in hidden:
        path = Path(path)
        real = Path(os.path.realpath(path))
        for candidate in {path, real}:
            if not candidate.exists() or not inside(candidate, mounted):
                continue
            if candidate.is_dir():
                args += ["--tmpfs", str(candidate), "--remount-ro", str(candidate)]
            else:
                args += ["--ro-bind", "/dev/null", str(candidate)]
    args += ["--chdir", str(Path(workdir).resolve()), "--"]
    return args
