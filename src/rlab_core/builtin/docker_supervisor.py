"""Supervising one candidate container: its log, its limits, its end.

:class:`LogWatcher` streams the container's log to a file, kills the container when the log
passes its limit, then waits for its exit. :func:`supervise` polls until then, sampling
the container's cgroup and killing it on cancel, timeout or a full disk (the writable
folders are bind mounts, measured on this side), and says what happened.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, BinaryIO

from rlab_core.builtin import docker_daemon
from rlab_core.builtin.candidate_group import DiskWatch
from rlab_core.task_records import SandboxRequest

log = logging.getLogger("rlab_core.builtin.docker_sandbox")  # the sandbox's logger
KILL_GRACE_S = 30.0


class LogWatcher(threading.Thread):
    """Streams the container's log to a file, kills it on a flood, then waits for its exit."""

    def __init__(self, container: Any, sink: BinaryIO, max_bytes: int) -> None:
        super().__init__(daemon=True)
        self.container = container
        self.sink = sink
        self.max_bytes = max_bytes
        self.written = 0
        self.flooded = False
        self.status: dict[str, Any] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for chunk in self.container.logs(stream=True, follow=True, stdout=True, stderr=True):
                self.sink.write(chunk)
                self.written += len(chunk)
                if self.written > self.max_bytes:
                    self.flooded = True
                    with contextlib.suppress(Exception):
                        self.container.kill()
                    break
            self.status = self.container.wait()
        except Exception as exc:  # reported by the supervisor
            self.error = exc


@dataclass(frozen=True)
class ContainerEnd:
    """How a supervised container ended."""

    killed_by: str | None  # "output", "cancelled", "timeout", "disk" or None
    wall_s: float
    watcher: LogWatcher  # its status (the daemon's wait() answer) and the log bytes written
    usage: docker_daemon.CgroupUsage


def supervise(
    container: Any,
    sink: BinaryIO,
    request: SandboxRequest,
    max_log: int,
    *,
    cancelled: threading.Event,
    poll_interval_s: float,
) -> ContainerEnd:
    """Wait for the started container's exit, killing it on a limit or cancel; what happened."""
    started = time.perf_counter()
    container.reload()
    usage = docker_daemon.CgroupUsage(container.attrs["State"].get("Pid", 0), container.id)
    watcher = LogWatcher(container, sink, max_log)
    watcher.start()
    # the writable folders are bind mounts: their disk use is measured on this side
    disk = DiskWatch([request.workdir, request.output_dir, request.cache_dir], request.disk_mb)
    killed_by: str | None = None
    killed_at = 0.0
    interval = 0.002  # start fast so short candidates are not held up by the poll
    while watcher.is_alive():
        usage.sample()
        now = time.perf_counter()
        if watcher.flooded:
            killed_by = killed_by or "output"
        elif killed_by is None and cancelled.is_set():
            killed_by, killed_at = "cancelled", now
            with contextlib.suppress(Exception):
                container.kill()
        elif killed_by is None and now - started > request.timeout_s:
            killed_by, killed_at = "timeout", now
            with contextlib.suppress(Exception):
                container.kill()
        elif killed_by is None and disk.over():
            killed_by, killed_at = "disk", now
            with contextlib.suppress(Exception):
                container.kill()
        elif killed_at and now - killed_at > KILL_GRACE_S:
            break  # the daemon did not end the log stream; removal will
        watcher.join(interval)
        interval = min(poll_interval_s, interval * 2)
    wall = time.perf_counter() - started
    if watcher.flooded and killed_by is None:
        killed_by = "output"
    if killed_by is None and disk.over(force=True):
        killed_by = "disk"  # a burst between two checks still broke the limit
    if watcher.error is not None and watcher.status is None:
        log.warning("lost the container's log stream: %s", watcher.error)
        with contextlib.suppress(Exception):
            watcher.status = container.wait(timeout=30)
    return ContainerEnd(killed_by, wall, watcher, usage)
