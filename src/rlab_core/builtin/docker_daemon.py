"""Talking to the Docker daemon: the lazy SDK import, clear connection errors, the
clean-up of containers a crashed run left behind, and a container's cgroup usage.

Nothing here imports the Docker SDK at module level, so registering the ``docker``
sandbox (``rlab plugins``, ``rlab --help``) never loads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from pathlib import Path
from typing import Any

import psutil

from rlab_core.errors import SandboxUnavailableError

log = logging.getLogger(__name__)

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
SANDBOX_LABEL = "rlab.sandbox"
OWNER_HOST, OWNER_PID, OWNER_STARTED = "rlab.owner_host", "rlab.owner_pid", "rlab.owner_started"


def load_sdk() -> Any:
    """The ``docker`` module, or a clear error saying how to install it."""
    try:
        import docker
    except ImportError:
        raise SandboxUnavailableError(
            "The docker sandbox needs the Docker SDK for Python; install it with "
            "`uv pip install 'rlab-core[docker]'` (or `pip install docker`)."
        ) from None
    return docker


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _os_errors(exc: BaseException) -> list[OSError]:
    """OSErrors in the exception chain and nested in its arguments (urllib3 wraps them)."""
    found: list[OSError] = []
    pending: list[object] = list(_chain(exc))
    while pending and len(found) < 20:
        item = pending.pop(0)
        if isinstance(item, OSError) and item.strerror:
            found.append(item)
        if isinstance(item, BaseException):
            pending.extend(item.args)
            pending.extend(e for e in (item.__cause__, item.__context__) if e is not None)
        elif isinstance(item, tuple | list):
            pending.extend(item)
    return found


def describe_connect_error(exc: BaseException, daemon: str) -> str:
    """One sentence on why the daemon at ``daemon`` cannot be used, and the way out."""
    text = " ".join(str(e) for e in _chain(exc))
    causes = _os_errors(exc)
    if any(isinstance(e, PermissionError) for e in causes) or "Permission denied" in text:
        return (
            f"Permission denied on the Docker socket {daemon}; add your user to the docker group "
            "(`sudo usermod -aG docker $USER`, then log in again) or set DOCKER_HOST to a daemon "
            "you may use."
        )
    reason = causes[0].strerror if causes else text.split("version: ")[-1][:160]
    return (
        f"The Docker daemon at {daemon} is not reachable ({reason}); start it with "
        "`sudo systemctl start docker` (or `sudo dockerd &`), or set DOCKER_HOST "
        "(or -o sandbox.base_url=...) to a running daemon."
    )


def connect(base_url: str | None, timeout_s: float) -> tuple[Any, str]:
    """A connected ``DockerClient`` and the address it talks to."""
    docker = load_sdk()
    daemon = base_url or os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET
    try:
        if base_url:
            client = docker.DockerClient(base_url=base_url, timeout=int(timeout_s))
        else:
            client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except Exception as exc:  # the SDK raises DockerException or a requests error
        raise SandboxUnavailableError(describe_connect_error(exc, daemon)) from None
    return client, daemon


def owner_labels() -> dict[str, str]:
    """Labels that let a later rlab tell whether a container's owner is still alive."""
    me = psutil.Process()
    return {
        SANDBOX_LABEL: "docker",
        OWNER_HOST: socket.gethostname(),
        OWNER_PID: str(me.pid),
        OWNER_STARTED: f"{me.create_time():.2f}",
    }


def _owner_alive(labels: dict[str, str]) -> bool:
    try:
        proc = psutil.Process(int(labels.get(OWNER_PID, "0")))
        return abs(proc.create_time() - float(labels.get(OWNER_STARTED, "0"))) < 1.0
    except (psutil.Error, ValueError):
        return False


def remove_leftovers(client: Any) -> list[str]:
    """Remove rlab containers whose owning process on this host is gone; return their ids.

    Every run removes its container in a ``finally``; only a killed rlab leaves one behind.
    Containers owned by another host are left alone (their owner may still be running).
    """
    removed = []
    here = socket.gethostname()
    for container in client.containers.list(all=True, filters={"label": f"{SANDBOX_LABEL}=docker"}):
        labels = container.labels or {}
        if labels.get(OWNER_HOST) != here or _owner_alive(labels):
            continue
        with contextlib.suppress(Exception):  # already gone: another rlab cleaned it
            container.remove(force=True)
            removed.append(container.id)
    if removed:
        log.info("removed %d container(s) left by a crashed rlab run", len(removed))
    return removed


class CgroupUsage:
    """Peak memory and CPU time of a running container, read from its cgroup on this host.

    Works when the daemon runs on this machine and its cgroups are visible here (cgroup v1:
    ``memory.max_usage_in_bytes`` and ``cpuacct.usage``; v2: ``memory.peak`` and
    ``cpu.stat``). Otherwise :attr:`source` says ``unavailable`` and the figures stay 0.
    """

    def __init__(self, pid: int, container_id: str, root: Path = Path("/sys/fs/cgroup")) -> None:
        self.peak_mb = 0.0
        self.cpu_s = 0.0
        self.memory_file: Path | None = None
        self.cpu_file: Path | None = None
        self.source = "unavailable"
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines() if pid else []
        except OSError:
            lines = []
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if container_id not in path:
                continue  # another PID namespace, or the container is gone
            names = controllers.split(",")
            base = root / controllers / path.lstrip("/")
            if "memory" in names:
                self.memory_file = base / "memory.max_usage_in_bytes"
                self.source = "cgroup v1 memory.max_usage_in_bytes"
            if "cpuacct" in names:
                self.cpu_file = base / "cpuacct.usage"
            if controllers == "" and self.memory_file is None:
                unified = root / path.lstrip("/")
                if (unified / "memory.peak").exists():
                    self.memory_file = unified / "memory.peak"
                    self.source = "cgroup v2 memory.peak"
                self.cpu_file = self.cpu_file or unified / "cpu.stat"

    def sample(self) -> None:
        """Read the current figures; a cgroup that is already gone keeps the last ones."""
        if self.memory_file is not None:
            with contextlib.suppress(OSError, ValueError):
                self.peak_mb = max(self.peak_mb, int(self.memory_file.read_text()) / 2**20)
        if self.cpu_file is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = self.cpu_file.read_text()
                if self.cpu_file.name == "cpu.stat":
                    usec = next(ln for ln in text.splitlines() if ln.startswith("usage_usec"))
                    self.cpu_s = int(usec.split()[1]) / 1e6
                else:
                    self.cpu_s = int(text) / 1e9
