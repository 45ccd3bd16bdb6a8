"""The ``local`` sandbox: a candidate as a supervised process group on this machine.

Each run gets its own session and process group. A supervisor polls the group: the
wall-clock timeout, the memory limit (resident memory summed over every descendant) and
the output limit kill the whole group, children included, and say which limit did it.
Children still alive when the candidate exits are killed too. Isolation comes from
:mod:`rlab_core.builtin.jail`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

import psutil
from pydantic import BaseModel, ConfigDict, Field

from rlab_core.builtin import jail
from rlab_core.errors import SandboxUnavailableError
from rlab_core.interfaces import Sandbox, SandboxRequest
from rlab_core.models import Execution

log = logging.getLogger(__name__)
LOG_TAIL_BYTES = 4000


class LocalSandboxConfig(BaseModel):
    """Options of the ``local`` sandbox."""

    model_config = ConfigDict(extra="forbid")

    isolation: Literal["auto", "bubblewrap", "netns", "none"] = Field(
        default="auto", description="Isolation level; auto takes the strongest available."
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


class _Group:
    """Tracks every process of one candidate so none outlives it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.seen: dict[int, psutil.Process] = {}
        self.cpu: dict[int, float] = {}

    def sample(self) -> float:
        """Resident memory of the whole group, MiB; also remembers every descendant."""
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
                    total += proc.memory_info().rss
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
            except psutil.Error:
                continue
        return total / 2**20

    def kill(self) -> None:
        """SIGKILL the process group and every descendant ever seen."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        for proc in list(self.seen.values()):
            try:
                if proc.is_running():
                    proc.kill()
            except psutil.Error:
                continue


class LocalSandbox(Sandbox):
    """Runs candidates as local processes, jailed by bubblewrap when it is available."""

    Config = LocalSandboxConfig

    def __init__(self, config: BaseModel) -> None:
        super().__init__(config)
        self.options: LocalSandboxConfig = config  # type: ignore[assignment]
        self.python = self.options.python or sys.executable
        self._cancelled = threading.Event()
        self._level = jail.detect_level(self.options.isolation)
        if not self._level:
            raise SandboxUnavailableError(
                f"Isolation '{self.options.isolation}' is not available here; install bubblewrap "
                "(Debian: apt-get install bubblewrap) or use -o sandbox.isolation=auto."
            )
        if self._level == "none":
            log.warning(
                "NO ISOLATION: candidates run with this user's full access (network, files); "
                "install bubblewrap to jail them."
            )

    def isolation_level(self) -> str:
        return self._level

    def cancel(self) -> None:
        """Kill every candidate this sandbox is running; their runs return as cancelled."""
        self._cancelled.set()

    def isolation_details(self) -> dict[str, Any]:
        return {
            "level": self._level,
            "network": "none" if self._level in ("bubblewrap", "netns") else "host",
            "filesystem": "jailed view" if self._level == "bubblewrap" else "host",
            "hidden_paths": self._level == "bubblewrap",
            "python": self.python,
        }

    def _wrap(self, request: SandboxRequest) -> list[str]:
        command = [self.python if c == "python" else c for c in request.command]
        if self._level == "bubblewrap":
            prefix = jail.bubblewrap_args(
                python=self.python,
                workdir=request.workdir,
                data_dir=request.data_dir,
                writable=[request.output_dir, request.cache_dir],
                hidden=request.hidden_paths,
            )
            return [*prefix, *command]
        if self._level == "netns":
            return [*(jail.netns_prefix() or ()), *command]
        return command

    def run(self, request: SandboxRequest) -> Execution:
        setup_start = time.perf_counter()
        argv = self._wrap(request)
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
            group = _Group(proc.pid)
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
                    if killed_by:
                        group.kill()
                        _, status, rusage = os.wait4(proc.pid, 0)
                        break
                    self._cancelled.wait(interval)
                    interval = min(self.options.poll_interval_s, interval * 2)
            except BaseException:
                # Ctrl-C or a bug here: the candidate lives in its own session and would
                # not see the signal, so it must not outlive the supervisor
                group.kill()
                raise
            wall = time.perf_counter() - started
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
