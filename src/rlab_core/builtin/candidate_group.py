"""What the local sandbox's supervisor watches: one candidate's processes, memory and disk.

Memory is the resident memory of every process of the candidate plus what it holds in its
jail's own tmpfs mounts (``/tmp``, ``/var/tmp``, ``/dev/shm``): tmpfs pages are memory that
no process's resident size shows. They are measured from outside, through
``/proc/<pid>/root`` of a process inside the jail. Disk is what the candidate's working,
output and cache folders hold (allocated blocks), walked every half second or less often
when a walk is slow.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from rlab_core.outputs import disk_usage_bytes

#: How long a launcher that was asked to kill its descendants gets before SIGKILL.
LAUNCHER_GRACE_S = 2.0


def _mountinfo(path: str) -> list[list[str]]:
    try:
        with open(path) as handle:
            return [line.split() for line in handle]
    except OSError:
        return []


def _unescape(field: str) -> str:
    """A mountinfo path: spaces and the like come as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


class JailTmpfs:
    """Bytes held in a jail's private tmpfs mounts, read from outside the jail."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.namespace = self._namespace("self")
        # the host's own tmpfs (its /dev/shm, /run) are not the candidate's to answer for
        self.host_devices = {f[2] for f in _mountinfo("/proc/self/mountinfo") if len(f) > 2}

    @staticmethod
    def _namespace(pid: int | str) -> str:
        try:
            return os.readlink(f"/proc/{pid}/ns/mnt")
        except OSError:
            return ""

    def _inside(self, pids: Iterable[int]) -> int | None:
        """A process in another mount namespace than ours (the deepest seen last wins)."""
        if self.pid is not None and self._namespace(self.pid) not in ("", self.namespace):
            return self.pid
        found = None
        for pid in pids:
            if self._namespace(pid) not in ("", self.namespace):
                found = pid
        return found

    def used_bytes(self, pids: Iterable[int]) -> int:
        """What the jail's writable tmpfs mounts hold now (0 where there is no jail)."""
        self.pid = self._inside(pids)
        if self.pid is None:
            return 0
        total, counted = 0, set()
        for fields in _mountinfo(f"/proc/{self.pid}/mountinfo"):
            try:
                cut = fields.index("-")
            except ValueError:
                continue
            device, point, options = fields[2], _unescape(fields[4]), fields[5]
            if fields[cut + 1] != "tmpfs" or "rw" not in options.split(","):
                continue
            if device in self.host_devices or device in counted:
                continue
            path = f"/proc/{self.pid}/root{point}"
            try:
                major, minor = (int(n) for n in device.split(":"))
                # the path must still lead into that very tmpfs (the jail may be going away)
                if os.stat(path).st_dev != os.makedev(major, minor):
                    continue
                info = os.statvfs(path)
            except (OSError, ValueError):
                continue
            counted.add(device)
            total += (info.f_blocks - info.f_bfree) * info.f_frsize
        return total


class CandidateGroup:
    """Every process of one candidate, so that none outlives it.

    ``launcher`` says the root process is :mod:`~rlab_core.builtin.jail_launcher` in
    ``reap`` mode: it is not counted as the candidate's memory, and a kill first asks it to
    kill every descendant (orphans re-parented to it included), then SIGKILLs the group.
    """

    def __init__(self, pid: int, *, launcher: bool = False) -> None:
        self.pid = pid
        self.launcher = launcher
        self.reaped = False
        self.seen: dict[int, psutil.Process] = {}
        self.cpu: dict[int, float] = {}
        self.tmpfs = JailTmpfs()
        self.tmpfs_peak_mb = 0.0

    def sample(self) -> float:
        """Resident memory of the group plus its jail's tmpfs, MiB; remembers every process."""
        total = 0
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            procs = []
        for proc in procs:
            self.seen.setdefault(proc.pid, proc)
            try:
                with proc.oneshot():
                    if not (self.launcher and proc.pid == self.pid):
                        total += proc.memory_info().rss
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
            except psutil.Error:
                continue
        tmpfs_mb = self.tmpfs.used_bytes(p.pid for p in procs) / 2**20
        self.tmpfs_peak_mb = max(self.tmpfs_peak_mb, tmpfs_mb)
        return total / 2**20 + tmpfs_mb

    def _stop_launcher(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + LAUNCHER_GRACE_S
        while time.monotonic() < deadline:
            # WNOWAIT: look without reaping; the supervisor reaps the launcher itself
            state = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if state is not None:
                return
            time.sleep(0.005)

    def kill(self) -> None:
        """Kill the whole group: every descendant ever seen, orphans included."""
        if self.launcher and not self.reaped:
            with contextlib.suppress(ChildProcessError):
                self._stop_launcher()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        for proc in list(self.seen.values()):
            try:
                if proc.is_running():
                    proc.kill()
            except psutil.Error:
                continue


class DiskWatch:
    """Walks the candidate's folders now and then; says when they hold more than the cap."""

    def __init__(self, folders: Iterable[Path], limit_mb: int | None, *, first_s: float = 0.5):
        self.folders = [Path(f) for f in folders]
        self.limit = None if limit_mb is None else limit_mb * 2**20
        self.next_at = time.monotonic() + first_s
        self.used = 0
        self.walks: list[float] = []

    def over(self, *, force: bool = False) -> bool:
        """True when a walk due now (or a forced one) finds the folders past the cap."""
        if self.limit is None or (time.monotonic() < self.next_at and not force):
            return False
        began = time.monotonic()
        self.used = disk_usage_bytes(self.folders)
        took = time.monotonic() - began
        self.walks.append(took)
        # a slow walk (a huge cache) is not repeated so often that it slows the candidate
        self.next_at = time.monotonic() + max(0.5, 20 * took)
        return self.used > self.limit
