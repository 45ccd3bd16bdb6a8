"""Images and mounts of the ``docker`` sandbox.

Two kinds of image run candidates:

- ``host-interpreter`` (the offline default): an image imported locally from an empty root
  file system (one empty ``/tmp`` folder), so nothing is pulled. The candidate runs this machine's interpreter: the
  system folders, the interpreter's prefixes (virtual environment included) and a few
  ``/etc`` entries are bind-mounted read-only at their own paths, the same view the
  bubblewrap jail gives (:mod:`rlab_core.builtin.jail`).
- ``user``: an image you name (for example built from ``docs/candidate.Dockerfile``) that
  must already be in the daemon; rlab never pulls.

Either way the data folder is mounted read-only and the working, output and cache folders
writable, all at their host paths so the contract's ``RLAB_*`` variables stay valid, and a
task's hidden paths that would show through a mount are covered by an empty mount.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlab_core.builtin import jail
from rlab_core.errors import SandboxUnavailableError
from rlab_core.task_records import SandboxRequest

HOST_IMAGE_REPO = "rlab-hostpython"
#: Bumped whenever the content of the host-interpreter image changes.
IMAGE_LAYOUT = "2"
IMAGE_LABEL = "rlab.image"
DOCKERFILE_HINT = "docker build -t {name} -f docs/candidate.Dockerfile ."

#: Docker writes /etc/hosts, /etc/hostname and /etc/resolv.conf itself; binding them clashes.
_DOCKER_MANAGED_ETC = {"hosts", "hostname", "resolv.conf"}


@dataclass(frozen=True)
class Bind:
    """A host path mounted into the container."""

    source: str
    target: str
    read_only: bool = True


def host_interpreter_binds(python: str) -> list[Bind]:
    """Read-only binds that let ``python`` run in an empty root file system."""
    binds: list[Bind] = []
    mounted: list[Path] = []
    for folder in jail.SYSTEM_DIRS:
        path = Path(folder)
        if folder == "/sbin":
            continue  # docker mounts its init at /sbin/docker-init; candidates need no /sbin
        if path.is_dir():  # a merged-/usr symlink (/bin -> usr/bin) is bound at its own name
            binds.append(Bind(os.path.realpath(path), folder))
            mounted.append(path)
    for root in jail.python_roots(python):
        if root.is_dir() and not jail.inside(root, mounted):
            binds.append(Bind(str(root), str(root)))
            mounted.append(root)
    for entry in jail.ETC_ENTRIES:
        path = Path("/etc") / entry
        if entry not in _DOCKER_MANAGED_ETC and path.exists():
            binds.append(Bind(os.path.realpath(path), str(path)))
    return binds


def host_image_name(python: str, binds: list[Bind]) -> str:
    """``rlab-hostpython:<hash>``, one tag per interpreter and mount layout."""
    key = "\n".join([IMAGE_LAYOUT, python, *(f"{b.source}:{b.target}" for b in binds)])
    return f"{HOST_IMAGE_REPO}:{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def ensure_host_image(client: Any, name: str) -> str:
    """Import the (all but empty) host-interpreter image once per daemon; return its id."""
    from docker.errors import ImageNotFound

    try:
        return client.images.get(name).id
    except ImageNotFound:
        pass
    empty = io.BytesIO()
    with tarfile.open(fileobj=empty, mode="w") as archive:
        # only /tmp, sticky and world-writable: the tmpfs mounted there keeps this mode even
        # when a candidate's folders are mounted below it (a pytest tmp_path, say)
        tmp = tarfile.TarInfo("tmp")
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        archive.addfile(tmp)
    repository, tag = name.split(":", 1)
    client.api.import_image_from_data(
        empty.getvalue(),
        repository=repository,
        tag=tag,
        changes=[f"LABEL {IMAGE_LABEL}=host-interpreter"],
    )
    return client.images.get(name).id


def require_user_image(client: Any, name: str, daemon: str) -> str:
    """The id of a user-named image, or a clear error when the daemon lacks it."""
    from docker.errors import ImageNotFound

    try:
        return client.images.get(name).id
    except ImageNotFound:
        raise SandboxUnavailableError(
            f"The Docker image '{name}' is not in the daemon at {daemon} (rlab never pulls); "
            f"build it from docs/candidate.Dockerfile: {DOCKERFILE_HINT.format(name=name)}"
        ) from None


#: Where a user image sees the candidate's folders (its own /root, /home may be closed).
USER_IMAGE_DIRS = {
    "workdir": "/rlab/work",
    "data_dir": "/rlab/data",
    "output_dir": "/rlab/output",
    "cache_dir": "/rlab/cache",
}


@dataclass
class MountPlan:
    """The binds and tmpfs mounts of one container, and where the candidate's folders appear."""

    binds: list[Bind]
    tmpfs: dict[str, str]
    #: host path (as given and resolved) -> container path of the four candidate folders
    places: dict[str, str] = field(default_factory=dict)

    def container_path(self, host: str | Path) -> str:
        """Where ``host`` (or a path below one of the candidate folders) shows in the container."""
        text = str(host)
        for source in sorted(self.places, key=len, reverse=True):
            if text == source or text.startswith(source.rstrip("/") + "/"):
                return self.places[source] + text[len(source) :]
        return text

    def container_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with every value that names a candidate folder rewritten to its container path."""
        return {name: self.container_path(value) for name, value in env.items()}


def plan_mounts(
    base: list[Bind], request: SandboxRequest, tmp_size_mb: int, *, remap: bool = False
) -> MountPlan:
    """Every bind and tmpfs of one candidate container.

    The candidate's folders are mounted at their host paths, or (``remap``, for user images)
    under ``/rlab``. Hidden paths that lie inside a mounted tree are covered: a folder by an
    empty tmpfs (read-only unless another mount sits below it), a file by ``/dev/null``; a
    bind whose source is itself hidden is dropped.
    """
    hidden: set[Path] = set()
    for raw in request.hidden_paths:
        path = Path(raw)
        hidden |= {path, Path(os.path.realpath(path))}
    plan = MountPlan(binds=[], tmpfs={})
    binds = [b for b in base if Path(b.source) not in hidden and Path(b.target) not in hidden]
    for key, writable in (
        ("data_dir", False),
        ("workdir", True),
        ("output_dir", True),
        ("cache_dir", True),
    ):
        given = Path(getattr(request, key))
        real = os.path.realpath(given)
        target = USER_IMAGE_DIRS[key] if remap else real
        plan.places[str(given)] = plan.places[real] = target
        binds.append(Bind(real, target, read_only=not writable))
    by_target = {b.target: b for b in binds}  # a later (writable) bind wins a shared target
    targets = [Path(t) for t in by_target]
    plan.tmpfs["/tmp"] = f"rw,exec,nosuid,nodev,size={tmp_size_mb}m,mode=1777"
    for path in sorted(hidden):
        inner = Path(plan.container_path(path))
        if str(inner) in by_target or not path.exists() or not jail.inside(inner, targets):
            continue
        if path.is_dir():
            holds_mounts = any(inner in t.parents for t in targets)
            plan.tmpfs[str(inner)] = ("rw" if holds_mounts else "ro") + ",size=64k,mode=755"
        else:
            by_target[str(inner)] = Bind("/dev/null", str(inner))
    plan.binds = list(by_target.values())
    return plan
