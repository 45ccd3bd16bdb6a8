"""The ``docker`` sandbox: every candidate in a fresh, locked-down container.

Each run creates one container: no network, a read-only root file system, a private
``/tmp`` tmpfs, memory (no swap), CPU and process-count limits, every capability dropped,
``no-new-privileges``, a non-root user, only the allow-listed environment of the request.
The sanitized data is mounted read-only, the working, output and cache folders writable,
nothing else of the host's files but (with the offline image) the interpreter and system
libraries, read-only. The timeout and the output limit kill the container; the log is
streamed to ``request.log_path``; the container is always removed, and containers left by
a crashed rlab are found by label and removed when the next sandbox starts.

The Docker SDK is imported lazily (the ``docker`` extra of rlab-core). The options and the
user resolution are in :mod:`~rlab_core.builtin.docker_options`, the watch over a running
container in :mod:`~rlab_core.builtin.docker_supervisor`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from rlab_core.builtin import docker_daemon, docker_image
from rlab_core.builtin.docker_options import DockerSandboxConfig, resolve_user
from rlab_core.builtin.docker_supervisor import supervise
from rlab_core.builtin.local_sandbox import read_tail
from rlab_core.errors import SandboxUnavailableError
from rlab_core.interfaces import Sandbox
from rlab_core.records import Execution
from rlab_core.task_records import SandboxRequest

log = logging.getLogger(__name__)


def _run_labels(request: SandboxRequest) -> dict[str, str]:
    """Run and node names, read off the run-folder layout ``<run>/nodes/<node>/log.txt``."""
    node_dir = request.log_path.parent
    in_run = node_dir.parent.name == "nodes"
    return {
        "rlab.run": node_dir.parent.parent.name if in_run else "",
        "rlab.node": node_dir.name if in_run else "",
    }


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
        self.user, self.owner = resolve_user(self.config.user)

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
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "docker sandbox: the container is the one of %s",
                _docker_run_line(self, request, command, memory_mb, plan, env),
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
                end = supervise(
                    container,
                    sink,
                    request,
                    max_log,
                    cancelled=self._cancelled,
                    poll_interval_s=self.config.poll_interval_s,
                )
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
        killed_by, watcher, usage = end.killed_by, end.watcher, end.usage
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
            wall_s=round(end.wall_s, 4),
            cpu_s=round(usage.cpu_s, 4),
            peak_memory_mb=round(peak, 1),
            timed_out=killed_by == "timeout",
            killed_by=killed_by,  # type: ignore[arg-type]
            log_tail=read_tail(request.log_path),
            log_bytes=watcher.written,
            start_overhead_s=round(started - setup_start, 4),
            isolation="docker",
        )

    def cancel(self) -> None:
        """Kill every running candidate container; their runs return as cancelled."""
        self._cancelled.set()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()


def _docker_run_line(
    sandbox: DockerSandbox,
    request: SandboxRequest,
    command: list[str],
    memory_mb: int,
    plan: docker_image.MountPlan,
    env: dict[str, str],
) -> str:
    """The ``docker run`` line equivalent to the container created, for ``--verbose``.

    Environment variables appear by name only (``-e NAME``): values never reach a log.
    """
    argv = ["docker", "run", "--rm", "--network", "none", "--read-only", "--ipc", "private"]
    argv += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    argv += ["--user", str(sandbox.user), "--memory", f"{memory_mb}m"]
    argv += ["--memory-swap", f"{memory_mb}m", "--cpus", f"{sandbox._cpus(request):g}"]
    argv += ["--pids-limit", str(sandbox.config.pids)] + (["--init"] if sandbox.config.init else [])
    argv += ["--workdir", plan.container_path(request.workdir)]
    for bind in plan.binds:
        readonly = ",readonly" if bind.read_only else ""
        argv += ["--mount", f"type=bind,source={bind.source},target={bind.target}{readonly}"]
    for path, options in (plan.tmpfs or {}).items():
        argv += ["--tmpfs", f"{path}:{options}" if options else path]
    for name in sorted(env):
        argv += ["-e", name]
    return shlex.join([*argv, sandbox.image, *command])


__all__ = ["DockerSandbox", "DockerSandboxConfig"]
