"""Options of the ``docker`` sandbox, and who the candidate runs as.

:class:`DockerSandboxConfig` is the sandbox's options model (never root, limits, image and
daemon); :func:`resolve_user` turns its ``user`` option into the container user and, when
rlab runs as root, the owner the writable folders are handed over to.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, field_validator

NOBODY = (65534, 65534)


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


def resolve_user(user: str | None) -> tuple[str, tuple[int, int] | None]:
    """The container user and, when rlab is root, who gets the writable folders.

    As a normal user, the candidate runs with your own uid:gid, so what it writes is
    yours. As root, it runs as nobody and the writable folders are chowned to it first
    (no world-writable folders); root can read and remove what it leaves anyway.
    """
    is_root = os.geteuid() == 0
    if user is None:
        if not is_root:
            return f"{os.getuid()}:{os.getgid()}", None
        return f"{NOBODY[0]}:{NOBODY[1]}", NOBODY
    return user, _numeric_owner(user) if is_root else None
