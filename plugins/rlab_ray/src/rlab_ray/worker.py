"""What runs on a Ray worker: unpack the candidate, run it in the node's local jail, pack results.

The candidate is run by the core's own :class:`~rlab_core.builtin.local_sandbox.LocalSandbox`
on the worker node, so it gets the same process-group supervision (timeout, memory and
output limits, children killed) and the same bubblewrap / netns isolation as a local run.
Ray must import this module by name on every worker: install rlab-core and rlab-ray there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlab_core.api import (
    Execution,
    LocalSandbox,
    LocalSandboxConfig,
    OutputsRefused,
    SandboxRequest,
    take_outputs,
)
from rlab_ray.options import IsolationRequest
from rlab_ray.transfer import (
    Fingerprint,
    data_fingerprint,
    pack_folder,
    relocate_env,
    unpack_folder,
)

#: The Ray task name: worker processes running a candidate show it as ``ray::rlab-candidate``.
TASK_NAME = "rlab-candidate"


class NotVisibleError(Exception):
    """A folder that must be shared with the worker is missing or differs there."""


@dataclass(frozen=True)
class WorkerJob:
    """One candidate run as shipped to a worker; paths are the driver's."""

    source: bytes
    command: list[str]
    env: dict[str, str]
    workdir: str
    output_dir: str
    data_dir: str
    data_fingerprint: Fingerprint
    cache_dir: str
    hidden_paths: list[str]
    timeout_s: float
    memory_mb: int
    max_output_mb: float
    isolation: IsolationRequest = "auto"
    python: str | None = None
    disk_mb: int | None = None
    outputs_mb: float | None = None


@dataclass(frozen=True)
class WorkerResult:
    """What comes back: the execution record, the log, the outputs, and where it ran."""

    execution: Execution
    log: bytes
    outputs: bytes
    node_ip: str
    node_id: str
    worker_pid: int


_sandboxes: dict[tuple[IsolationRequest, str | None], LocalSandbox] = {}
_lock = threading.Lock()


def local_sandbox(isolation: IsolationRequest, python: str | None) -> LocalSandbox:
    """This worker's local sandbox for ``isolation`` (the jail probe runs once per process)."""
    key = (isolation, python)
    with _lock:
        if key not in _sandboxes:
            _sandboxes[key] = LocalSandbox(LocalSandboxConfig(isolation=isolation, python=python))
        return _sandboxes[key]


def _where() -> tuple[str, str]:
    import ray

    return ray.util.get_node_ip_address(), ray.get_runtime_context().get_node_id()


def probe(isolation: IsolationRequest, python: str | None, hold_s: float = 0.0) -> dict[str, Any]:
    """The isolation a worker gives candidates, and where it ran (raises if unavailable).

    ``hold_s`` keeps the worker busy a moment, so that probes sent together start (and
    warm up) as many worker processes as there are probes.
    """
    sandbox = local_sandbox(isolation, python)
    time.sleep(hold_s)
    node_ip, node_id = _where()
    return {
        "level": sandbox.isolation_level(),
        "details": sandbox.isolation_details(),
        "node_ip": node_ip,
        "node_id": node_id,
    }


def _check_shared(job: WorkerJob, node_ip: str) -> None:
    data = Path(job.data_dir)
    if not data.is_dir():
        raise NotVisibleError(
            f"The data folder {data} is not visible on Ray node {node_ip}; put it on a "
            "filesystem every node mounts at the same path (e.g. RLAB_CACHE_HOME on NFS)."
        )
    if data_fingerprint(data) != tuple(tuple(e) for e in job.data_fingerprint):
        raise NotVisibleError(
            f"The data folder {data} on Ray node {node_ip} differs from rlab's (other files "
            "or sizes); it must be the same shared folder, not a copy."
        )
    if not Path(job.cache_dir).is_dir():
        raise NotVisibleError(
            f"The run's cache folder {job.cache_dir} is not visible on Ray node {node_ip}; put "
            "the run folder (--out) on a filesystem every node mounts at the same path."
        )


def _cap_bytes(outputs_mb: float | None) -> int:
    return int(outputs_mb * 2**20) if outputs_mb is not None else 2**62


def run_job(job: WorkerJob) -> WorkerResult:
    """Run one candidate on this worker in its local jail and pack what came of it."""
    node_ip, node_id = _where()
    _check_shared(job, node_ip)
    sandbox = local_sandbox(job.isolation, job.python)
    root = Path(tempfile.mkdtemp(prefix="rlab-ray-"))
    try:
        work, out, log = root / "work", root / "outputs", root / "log.txt"
        unpack_folder(job.source, work)
        out.mkdir()
        env = relocate_env(job.env, {job.workdir: str(work), job.output_dir: str(out)})
        # no guard of our own: at every level the local sandbox kills the candidate when the
        # process that started it (this worker) dies (bubblewrap's --die-with-parent, the
        # jail launcher's parent-death signal at netns and none)
        command = list(job.command)
        execution = sandbox.run(
            SandboxRequest(
                workdir=work,
                command=command,
                env=env,
                data_dir=Path(job.data_dir),
                output_dir=out,
                cache_dir=Path(job.cache_dir),
                log_path=log,
                hidden_paths=[Path(p) for p in job.hidden_paths],
                timeout_s=job.timeout_s,
                memory_mb=job.memory_mb,
                max_output_mb=job.max_output_mb,
                disk_mb=job.disk_mb,
            )
        )
        update: dict[str, Any] = {"command": execution.command[-len(job.command) :]}
        outputs = b""
        if execution.ok:
            # taken as data here, on the worker, before anything crosses the wire: a link
            # the candidate planted would otherwise be read on the worker and shipped as a file
            taken = root / "taken"
            try:
                take_outputs(out, taken, max_bytes=_cap_bytes(job.outputs_mb))
                outputs, _ = pack_folder(taken)
            except OutputsRefused as exc:
                update["output_problem"] = str(exc)
        return WorkerResult(
            execution=execution.model_copy(update=update),
            log=log.read_bytes() if log.exists() else b"",
            outputs=outputs,
            node_ip=node_ip,
            node_id=node_id,
            worker_pid=os.getpid(),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
