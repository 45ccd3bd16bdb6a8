"""The ``docker`` sandbox: every candidate in a fresh, locked-down container.

Each run creates one container: no network, a read-only root file system, a private
``/tmp`` tmpfs, memory (no swap), CPU and process-count limits, every capability dropped,
``no-new-privileges``, a non-root user, only the allow-listed environment of the request.
The sanitized data is mounted read-only, the working, output and cache folders writable,
nothing else of the host's files but (with the offline image) the interpreter and system
libraries, read-only. The timeout and the output limit kill the container; the log is
streamed to ``request.log_path``; the container is always removed, and containers left by
a crashed rlab are found by label and removed when the next sandbox starts.

The Docker SDK is imported lazily (the ``docker`` extra of rlab-core).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlab_core.builtin import docker_daemon, docker_image
from rlab_core.builtin.candidate_group import DiskWatch
from rlab_core.builtin.local_sandbox import read_tail
from rlab_core.errors import SandboxUnavailableError
from rlab_core.interfaces import Sandbox
from rlab_core.records import Execution
from rlab_core.task_records import SandboxRequest

log = logging.getLogger(__name__)
NOBODY = (65534, 65534)
KILL_GRACE_S = 30.0


class DockerSandboxConfig(BaseModel):
    """Options of the ``docker`` sandbox."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = Field(
        default=None,
        description="Candidate image, already in the daemon (e.g. built from "
        "docs/candidate.Dockerfile); None: the offline host-interpreter image, built locally "
        "from an empty root file system without pulling anything.",
    )
    base_url: str | None = Field(
        default=None,
        description="Docker daemon address; None: DOCKER_HOST, else unix:///var/run/docker.sock.",
    )
    python: str | None = Field(
        default=None,
        description="Interpreter run by the host-interpreter image; default: rlab's. "
        "A user image runs its own `python`.",
    )
    memory_mb: int | None = Field(
        default=None, gt=0, description="Memory limit in MiB, swap included; None: the task's."
    )
    cpus: float | None = Field(
        default=None,
        gt=0,
        description="CPU limit; None: the request's RLAB_THREADS, else 1 (capped at the "
        "daemon's CPUs).",
    )
    pids: int = Field(default=512, gt=0, description="Most processes and threads at once.")
    user: str | None = Field(
        default=None,
        description="uid[:gid] the candidate runs as (never root); None: your uid:gid when "
        "rlab is not root, else 65534:65534 (nobody), to which the writable folders are "
        "handed over.",
    )
    tmp_size_mb: int | None = Field(
        default=None, gt=0, description="Size of the private /tmp in MiB; None: the memory limit."
    )
    init: bool = Field(
        default=True, description="Run docker-init as PID 1 (reaps children, forwards signals)."
    )
    api_timeout_s: float = Field(
        default=60, gt=0, description="Timeout of one Docker API call (not of the candidate)."
    )
    poll_interval_s: float = Field(
        default=0.05, gt=0, le=5, description="Supervisor poll period (timeout, memory samples)."
    )

    @field_validator("user", mode="before")
    @classmethod
    def _not_root(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # `-o sandbox.user=1000` arrives as a number
        if isinstance(value, str) and value.split(":")[0] in ("0", "root", ""):
            raise ValueError("candidates never run as root; give a non-root uid[:gid]")
        return value


def _numeric_owner(user: str) -> tuple[int, int] | None:
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        return None
    return int(uid), int(gid or uid)


def _run_labels(request: SandboxRequest) -> dict[str, str]:
    """Run and node names, read off the run-folder layout ``<run>/nodes/<node>/log.txt``."""
    node_dir = request.log_path.parent
    in_run = node_dir.parent.name == "nodes"
    return {
        "rlab.run": node_dir.parent.parent.name if in_run else "",
        "rlab.node": node_dir.name if in_run else "",
    }


class _Watcher(threading.Thread):
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


class DockerSandbox(Sandbox[DockerSandboxConfig]):
    """Runs each candidate in a fresh container of a local image; never pulls."""

    def __init__(self, config: DockerSandboxConfig) -> None:
        super().__init__(config)
        self._cancelled = threading.Event()
        self.sdk = docker_daemon.load_sdk()
        self.client, self.daemon = docker_daemon.connect(
            self.config.base_url, self.config.api_timeout_s
        )
        info = self.client.info()
        self.daemon_cpus = int(info.get("NCPU") or os.cpu_count() or 1)
        self.server_version = str(info.get("ServerVersion", "?"))
        self.removed_leftovers = docker_daemon.remove_leftovers(self.client)
        self.labels = docker_daemon.owner_labels()
        if self.config.image:
            self.image = self.config.image
            self.image_kind = "user"
            self.python = "python"
            self.base_binds: list[docker_image.Bind] = []
            docker_image.require_user_image(self.client, self.image, self.daemon)
        else:
            self.python = self.config.python or sys.executable
            self.image_kind = "host-interpreter"
            self.base_binds = docker_image.host_interpreter_binds(self.python)
            self.image = docker_image.host_image_name(self.python, self.base_binds)
            docker_image.ensure_host_image(self.client, self.image)
        self.user, self.owner = self._resolve_user()

    def _resolve_user(self) -> tuple[str, tuple[int, int] | None]:
        """The container user and, when rlab is root, who gets the writable folders.

        As a normal user, the candidate runs with your own uid:gid, so what it writes is
        yours. As root, it runs as nobody and the writable folders are chowned to it first
        (no world-writable folders); root can read and remove what it leaves anyway.
        """
        is_root = os.geteuid() == 0
        if self.config.user is None:
            if not is_root:
                return f"{os.getuid()}:{os.getgid()}", None
            return f"{NOBODY[0]}:{NOBODY[1]}", NOBODY
        return self.config.user, _numeric_owner(self.config.user) if is_root else None

    def isolation_level(self) -> str:
        return "docker"

    def isolation_details(self) -> dict[str, Any]:
        offline = self.image_kind == "host-interpreter"
        return {
            "level": "docker",
            "image": self.image,
            "image_kind": self.image_kind,
            "image_source": (
                "built locally from an empty root file system (nothing pulled); this machine's "
                f"interpreter {self.python} and system libraries are bind-mounted read-only"
                if offline
                else "user image from the daemon (see docs/candidate.Dockerfile)"
            ),
            "daemon": self.daemon,
            "server_version": self.server_version,
            "network": "none",
            "filesystem": "read-only root; data read-only; working, output and cache folders "
            "writable; private /tmp",
            "hidden_paths": True,
            "user": self.user,
            "limits": {
                "memory_mb": self.config.memory_mb or "task limit",
                "cpus": self.config.cpus or "RLAB_THREADS, else 1",
                "pids": self.config.pids,
            },
            "peak_memory": "sampled from the container's cgroup when visible on this machine, "
            "else 0",
        }

    def _hand_over(self, folders: list[Path]) -> None:
        if self.owner is None:
            return
        uid, gid = self.owner
        for folder in folders:
            for path in [folder, *folder.rglob("*")]:
                with contextlib.suppress(OSError):
                    if path.lstat().st_uid != uid:
                        os.lchown(path, uid, gid)

    def _cpus(self, request: SandboxRequest) -> float:
        cpus = self.config.cpus if self.config.cpus is not None else float(request.threads)
        return min(cpus, float(self.daemon_cpus))

    def _create(self, request: SandboxRequest, command: list[str], memory_mb: int) -> Any:
        tmp_mb = self.config.tmp_size_mb or memory_mb
        user_image = self.image_kind == "user"
        plan = docker_image.plan_mounts(self.base_binds, request, tmp_mb, remap=user_image)
        types = self.sdk.types
        mounts = [
            types.Mount(b.target, b.source, type="bind", read_only=b.read_only) for b in plan.binds
        ]
        env = plan.container_env(dict(request.env))
        if user_image:
            env.pop("PATH", None)  # the image's own PATH finds its interpreter
        max_log_kb = int(request.max_output_mb * 2 * 1024) + 1024
        name = re.sub(
            r"[^a-zA-Z0-9_.-]", "-", "-".join(filter(None, _run_labels(request).values()))
        )
        return self.client.containers.create(
            self.image,
            command,
            name=f"rlab-{name or 'candidate'}-{uuid.uuid4().hex[:8]}",
            working_dir=plan.container_path(request.workdir),
            environment=env,
            user=self.user,
            mounts=mounts,
            tmpfs=plan.tmpfs,
            read_only=True,
            network_mode="none",
            ipc_mode="private",
            hostname="rlab-candidate",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=f"{memory_mb}m",
            memswap_limit=f"{memory_mb}m",
            nano_cpus=int(self._cpus(request) * 1e9),
            pids_limit=self.config.pids,
            init=self.config.init,
            auto_remove=False,
            log_config=types.LogConfig(
                type="json-file", config={"max-size": f"{max_log_kb}k", "max-file": "1"}
            ),
            labels={**self.labels, **_run_labels(request)},
        )

    def run(self, request: SandboxRequest) -> Execution:
        from requests.exceptions import RequestException  # a dependency of the Docker SDK

        setup_start = time.perf_counter()
        errors = self.sdk.errors
        memory_mb = self.config.memory_mb or request.memory_mb
        command = [self.python if c == "python" else c for c in request.command]
        writable = [Path(request.workdir), Path(request.output_dir), Path(request.cache_dir)]
        for folder in writable:
            folder.mkdir(parents=True, exist_ok=True)
        self._hand_over(writable)
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        max_log = int(request.max_output_mb * 2**20)
        container = None
        try:
            container = self._create(request, command, memory_mb)
            with open(request.log_path, "wb") as sink:
                try:
                    container.start()
                except errors.APIError as exc:
                    raise SandboxUnavailableError(
                        f"Docker could not start the candidate in image {self.image}: "
                        f"{exc.explanation or exc}; check the image (-o sandbox.image=...)."
                    ) from None
                started = time.perf_counter()
                killed_by, wall, watcher, usage = self._supervise(container, sink, request, max_log)
            container.reload()
            state = container.attrs.get("State", {})
        except errors.ImageNotFound:
            raise SandboxUnavailableError(
                f"The Docker image '{self.image}' disappeared from the daemon at {self.daemon}; "
                f"build it again: {docker_image.DOCKERFILE_HINT.format(name=self.image)}"
            ) from None
        except errors.APIError as exc:
            raise SandboxUnavailableError(
                f"The Docker daemon at {self.daemon} refused the candidate's container: "
                f"{exc.explanation or exc}; check the sandbox options (-o sandbox....)."
            ) from None
        except (errors.DockerException, RequestException) as exc:  # the daemon went away
            raise SandboxUnavailableError(
                docker_daemon.describe_connect_error(exc, self.daemon)
            ) from None
        finally:
            if container is not None:
                with contextlib.suppress(Exception):
                    container.remove(force=True)
        exit_code: int | None = (watcher.status or {}).get("StatusCode", state.get("ExitCode"))
        if killed_by is None and state.get("OOMKilled") and exit_code != 0:
            killed_by = "memory"
        elif killed_by is None and exit_code is not None and 128 < exit_code <= 128 + 64:
            killed_by = "signal"  # docker-init reports a signal death as 128 + signal
        if killed_by:
            exit_code = None
        peak = usage.peak_mb
        if killed_by == "memory":
            peak = max(peak, float(memory_mb))
        if watcher.written > max_log:
            with open(request.log_path, "r+b") as handle:
                handle.truncate(max_log)  # keep the log within its limit on disk too
        return Execution(
            command=command,
            exit_code=exit_code,
            wall_s=round(wall, 4),
            cpu_s=round(usage.cpu_s, 4),
            peak_memory_mb=round(peak, 1),
            timed_out=killed_by == "timeout",
            killed_by=killed_by,  # type: ignore[arg-type]
            log_tail=read_tail(request.log_path),
            log_bytes=watcher.written,
            start_overhead_s=round(started - setup_start, 4),
            isolation="docker",
        )

    def _supervise(
        self, container: Any, sink: BinaryIO, request: SandboxRequest, max_log: int
    ) -> tuple[str | None, float, _Watcher, docker_daemon.CgroupUsage]:
        """Wait for the container's exit, killing it on timeout; return what happened."""
        started = time.perf_counter()
        container.reload()
        usage = docker_daemon.CgroupUsage(container.attrs["State"].get("Pid", 0), container.id)
        watcher = _Watcher(container, sink, max_log)
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
            elif killed_by is None and self._cancelled.is_set():
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
            interval = min(self.config.poll_interval_s, interval * 2)
        wall = time.perf_counter() - started
        if watcher.flooded and killed_by is None:
            killed_by = "output"
        if killed_by is None and disk.over(force=True):
            killed_by = "disk"  # a burst between two checks still broke the limit
        if watcher.error is not None and watcher.status is None:
            log.warning("lost the container's log stream: %s", watcher.error)
            with contextlib.suppress(Exception):
                watcher.status = container.wait(timeout=30)
        return killed_by, wall, watcher, usage

    def cancel(self) -> None:
        """Kill every running candidate container; their runs return as cancelled."""
        self._cancelled.set()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
