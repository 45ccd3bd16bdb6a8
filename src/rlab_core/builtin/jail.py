"""Isolation for the local sandbox: a bubblewrap jail, a network namespace, or nothing.

The jail shows a candidate only what it needs: the interpreter and system libraries
read-only, its sanitized data read-only, its working, output and cache folders writable,
private size-capped ``/tmp``, ``/var/tmp`` and ``/dev/shm``, no network, no capability, its
own pid namespace, and none of the task's hidden paths (raw data, private labels, the run
folder). Levels, strongest first: ``bubblewrap`` (:mod:`~rlab_core.builtin.bwrap_binary`
picks the binary), ``netns`` (:mod:`~rlab_core.builtin.jail_netns`: what ``unshare`` gives
without bubblewrap), ``none``. ``auto`` takes the strongest level that hides paths and
refuses to run where none does: running candidates unisolated must be asked for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlab_core.builtin.bwrap_binary import Bwrap, find_bwrap
from rlab_core.builtin.jail_netns import PRIVATE_TMP, Netns, find_netns
from rlab_core.errors import SandboxUnavailableError

LEVELS = ("bubblewrap", "netns", "none")
#: The same, as the public API names it (``rlab_core.api.ISOLATION_LEVELS``).
ISOLATION_LEVELS = LEVELS

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
    bwrap: Bwrap,
    python: str,
    workdir: Path,
    data_dir: Path,
    writable: Iterable[Path],
    hidden: Iterable[Path],
    tmpfs_bytes: int | None = None,
) -> list[str]:
    """The ``bwrap`` command line (without the program) for one candidate.

    ``tmpfs_bytes`` caps each private tmpfs (``/tmp``, ``/var/tmp``, ``/dev/shm``) where the
    binary knows ``--size``; what they hold counts as the candidate's memory either way.
    """
    args = [
        bwrap.path,
        "--die-with-parent",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        # run by root, bwrap keeps every capability unless told: the candidate could then
        # unmount the covers or mount the host's disk
        "--cap-drop",
        "ALL",
        "--hostname",
        "rlab-candidate",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    for folder in PRIVATE_TMP:
        if tmpfs_bytes and bwrap.supports_size:
            args += ["--size", str(tmpfs_bytes)]
        args += ["--tmpfs", folder]
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
    # the jail's own root and /dev are tmpfs too: read-only, they cannot hold memory
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", str(Path(workdir).resolve()), "--"]
    return args


NO_HIDING_WARNING = (
    "Candidates run without a jail that hides paths, so they could read private data (test "
    "labels, the run folder) and use the network and files of the user running rlab."
)


@dataclass(frozen=True)
class Isolation:
    """The level in effect and what was found on the way."""

    level: str
    bwrap: Bwrap | None = None
    netns: Netns | None = None

    @property
    def hides_paths(self) -> bool:
        """True when candidates cannot see the hidden paths, the run folder, other homes."""
        if self.level == "bubblewrap":
            return True
        return self.level == "netns" and self.netns is not None and self.netns.covers

    @property
    def pid_namespace(self) -> bool:
        """True when candidates see only their own processes (and orphans die with them)."""
        if self.level == "bubblewrap":
            return True
        return self.level == "netns" and self.netns is not None and self.netns.pid_namespace

    def details(self) -> dict[str, Any]:
        """The facts ``isolation_details()`` records."""
        filesystem = {
            "bubblewrap": "jailed view: system, interpreter and data read-only",
            "netns": "host files read-only, private paths and host secrets covered",
            "none": "host",
        }[self.level]
        if self.level == "netns" and not self.hides_paths:
            filesystem = "host"
        facts: dict[str, Any] = {
            "level": self.level,
            "network": "none" if self.level in ("bubblewrap", "netns") else "host",
            "filesystem": filesystem,
            "hidden_paths": self.hides_paths,
            "pid_namespace": self.pid_namespace,
        }
        if self.level == "bubblewrap" and self.bwrap is not None:
            facts["bwrap"] = self.bwrap.facts()
        elif self.bwrap is not None:  # auto fell back: say why bubblewrap did not run
            facts["bubblewrap_unavailable"] = self.bwrap.problem
        if not self.hides_paths:
            facts["private_data_readable"] = True
            facts["warning"] = NO_HIDING_WARNING
        return facts


def _netns_reason(netns: Netns) -> str:
    if not netns.works:
        return netns.problem
    return f"unshare cannot cover paths here ({netns.cover_problem})"


def select_isolation(requested: str = "auto", bwrap: str | None = None) -> Isolation:
    """The level to use: ``auto`` takes the strongest that hides paths, or refuses.

    Raises :class:`SandboxUnavailableError` when the requested level cannot work here, and
    for ``auto`` when no level that hides paths does (``none`` must be asked for).
    """
    found_bwrap: Bwrap | None = None
    if requested in ("auto", "bubblewrap"):
        found_bwrap = find_bwrap(bwrap)
        if found_bwrap.works:
            return Isolation("bubblewrap", bwrap=found_bwrap)
        if requested == "bubblewrap":
            raise SandboxUnavailableError(
                f"Isolation 'bubblewrap' is not available here: {found_bwrap.problem}; install "
                "bubblewrap (apt-get install bubblewrap), point -o sandbox.bwrap=PATH at a "
                "working bwrap, or use -o sandbox.isolation=auto."
            )
    if requested == "none":
        return Isolation("none")
    netns = find_netns()
    if requested == "netns":
        if not netns.works:
            raise SandboxUnavailableError(
                f"Isolation 'netns' is not available here: {netns.problem}; install util-linux "
                "(its unshare) or use -o sandbox.isolation=auto."
            )
        return Isolation("netns", netns=netns)
    if netns.covers:
        return Isolation("netns", bwrap=found_bwrap, netns=netns)
    assert found_bwrap is not None
    raise SandboxUnavailableError(
        f"No isolation that hides private data works here: {found_bwrap.problem}, and "
        f"{_netns_reason(netns)}; run candidates in the docker sandbox (--sandbox docker), "
        "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
        "install the distribution's bubblewrap where AppArmor restricts them), or opt in to "
        "unisolated candidates with -o sandbox.isolation=none (they can then read private data)."
    )


def detect_level(requested: str = "auto", bwrap: str | None = None) -> str:
    """The level :func:`select_isolation` picks, or ``""`` where it refuses."""
    try:
        return select_isolation(requested, bwrap).level
    except SandboxUnavailableError:
        return ""


def bubblewrap_works(bwrap: str | None = None) -> bool:
    """True when a bwrap (``bwrap`` if given, else the one :func:`find_bwrap` picks) works."""
    return find_bwrap(bwrap).works
