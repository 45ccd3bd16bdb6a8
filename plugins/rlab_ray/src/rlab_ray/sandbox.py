"""The ``ray`` sandbox: each candidate is one Ray task, run in the worker node's own jail.

Files: the candidate's source goes to the worker through the object store (a tar archive
unpacked into a fresh temporary folder there) and its outputs and log come back the same
way into the run folder; the sanitized data and the run's cache folder are used in place,
so they must be visible on every worker at the same path (always true on one machine; on
several, a shared filesystem) — a worker that cannot see them fails with a clear error.

Retries: a candidate whose Ray worker process or node is lost (worker crash, node death,
Ray's out-of-memory killer, lost result) is resubmitted, up to ``max_retries`` times; Ray
never places it on a node that died. A candidate's own crash, timeout or limit breach is
an ordinary result and is never retried. Every attempt lost is written at the top of the
node's log; when none is left the execution fails with the cause in its log.

``run`` is thread-safe: the research loop may call it from several threads at once, and
each call is an independent Ray task.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as rx

from rlab_core.api import (
    ISOLATION_LEVELS,
    Execution,
    Sandbox,
    SandboxRequest,
    SandboxUnavailableError,
    read_tail,
)
from rlab_ray.cluster import connect
from rlab_ray.options import RaySandboxConfig
from rlab_ray.transfer import Fingerprint, data_fingerprint, pack_folder, unpack_folder
from rlab_ray.worker import TASK_NAME, NotVisibleError, WorkerJob, WorkerResult, probe, run_job

log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 300.0
WARM_TIMEOUT_S = 60.0
WARM_WORKERS = 64

#: The worker running the candidate is gone: the candidate is not to blame, so it is retried.
LOST = (
    rx.WorkerCrashedError,
    rx.NodeDiedError,
    rx.ObjectLostError,
    rx.OutOfMemoryError,
    rx.OutOfDiskError,
    rx.LocalRayletDiedError,
    rx.RaySystemError,
)
#: The cluster cannot run candidates at all.
UNAVAILABLE = (rx.RuntimeEnvSetupError, rx.TaskUnschedulableError, rx.AuthenticationError)


FILE_ROUTE = {
    "source": "object store (tar, unpacked in a temporary folder on the worker)",
    "outputs_and_log": "object store (back into the run folder)",
    "data_dir": "shared filesystem: the same path on every worker, checked",
    "cache_dir": "shared filesystem: the same path on every worker, checked",
}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


class RaySandbox(Sandbox[RaySandboxConfig]):
    """Runs each candidate as a Ray task on a cluster, jailed by the worker's local sandbox."""

    def __init__(self, config: RaySandboxConfig) -> None:
        super().__init__(config)
        self._lock = threading.Lock()
        self._inflight: set[Any] = set()
        self._fingerprints: dict[str, Fingerprint] = {}
        self._cancelled = threading.Event()
        self.cluster = connect(self.config)
        try:
            self._task = ray.remote(run_job)
            self._worker = self._probe()
            self._resources = self.cluster.resources()
        except BaseException:
            self.cluster.close()
            raise

    def _probe(self) -> dict[str, Any]:
        """Ask the workers which jail they give candidates; start one worker per CPU on the way.

        One probe must answer; the others (one per cluster CPU, up to ``WARM_WORKERS``) are
        waited for a short while only, so a busy joined cluster does not hold up the start.
        Ray starts worker processes lazily and each takes seconds, so warming them here keeps
        that out of the first candidates' time and lets them start together.
        """
        task = ray.remote(probe)
        options = self.config.isolation, self.config.python
        warm = max(0, min(int(self.cluster.resources()["cpus"]), WARM_WORKERS) - 1)
        first = task.options(name="rlab-probe", num_cpus=0, max_retries=0).remote(*options, 0.3)
        others = [
            task.options(name="rlab-probe", num_cpus=1, max_retries=0).remote(*options, 0.3)
            for _ in range(warm)
        ]
        try:
            answers = [ray.get(first, timeout=PROBE_TIMEOUT_S)]
            ready, _ = ray.wait(others, num_returns=len(others), timeout=WARM_TIMEOUT_S)
            answers += ray.get(ready)
        except rx.RayTaskError as exc:
            raise SandboxUnavailableError(f"On the Ray workers: {exc.cause}") from None
        except rx.GetTimeoutError:
            raise SandboxUnavailableError(
                f"No Ray worker answered within {PROBE_TIMEOUT_S:g}s at {self.cluster.address}; "
                "check that the cluster has alive nodes (`ray status`)."
            ) from None
        levels = {a["node_ip"]: a["level"] for a in answers}
        # nodes may differ: report the weakest jail any of them gives
        weakest = max(levels.values(), key=ISOLATION_LEVELS.index)
        details = next(a["details"] for a in answers if a["level"] == weakest)
        return {"level": weakest, "details": details, "nodes": levels}

    def isolation_level(self) -> str:
        return f"ray+{self._worker['level']}"

    def isolation_details(self) -> dict[str, Any]:
        worker = self._worker["details"]
        return {
            "level": self.isolation_level(),
            "worker_isolation": self._worker["nodes"],
            "network": worker.get("network"),
            "filesystem": worker.get("filesystem"),
            "hidden_paths": worker.get("hidden_paths"),
            "address": self.cluster.address,
            "cluster_started_here": self.cluster.owned,
            "resources": self._resources,
            "num_cpus_per_candidate": self.config.num_cpus_per_candidate or "RLAB_THREADS",
            "max_retries": self.config.max_retries,
            "files": FILE_ROUTE,
        }

    def _cpus_for(self, request: SandboxRequest) -> float:
        wanted = self.config.num_cpus_per_candidate
        if wanted is None:
            wanted = float(request.threads)
        largest = self._resources["largest_node_cpus"]
        # more than any node has would wait forever in Ray's queue
        return min(wanted, largest) if largest else wanted

    def _fingerprint(self, data_dir: Path) -> Fingerprint:
        key = str(data_dir)
        with self._lock:
            if key not in self._fingerprints:
                if not data_dir.is_dir():
                    raise SandboxUnavailableError(f"The data folder {data_dir} does not exist.")
                self._fingerprints[key] = data_fingerprint(data_dir)
            return self._fingerprints[key]

    def run(self, request: SandboxRequest) -> Execution:
        start = time.perf_counter()
        if self._cancelled.is_set():
            return self._failed(request, ["[rlab-ray] cancelled before it started"], start)
        source, skipped = pack_folder(request.workdir)
        job = WorkerJob(
            source=source,
            command=list(request.command),
            env=dict(request.env),
            workdir=str(request.workdir),
            output_dir=str(request.output_dir),
            data_dir=str(request.data_dir),
            data_fingerprint=self._fingerprint(Path(request.data_dir)),
            cache_dir=str(request.cache_dir),
            hidden_paths=[str(p) for p in request.hidden_paths],
            timeout_s=request.timeout_s,
            memory_mb=request.memory_mb,
            max_output_mb=request.max_output_mb,
            isolation=self.config.isolation,
            python=self.config.python,
            disk_mb=request.disk_mb,
            outputs_mb=request.outputs_mb,
        )
        notes = [f"[rlab-ray] not sent to the worker (not regular files): {', '.join(skipped)}"]
        notes = notes if skipped else []
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            if self._cancelled.is_set():
                notes.append("[rlab-ray] cancelled: not retried")
                break
            try:
                result = self._attempt(job, self._cpus_for(request))
            except LOST as exc:
                last = attempt == attempts
                note = (
                    f"[rlab-ray] attempt {attempt} of {attempts}: the Ray worker running the "
                    f"candidate was lost ({_first_line(exc)}); "
                    + (
                        f"giving up after {attempts - 1} retries (sandbox.max_retries)"
                        if last
                        else "retrying on another worker"
                    )
                )
                log.warning("%s", note)
                notes.append(note)
                continue
            except rx.TaskCancelledError:
                notes.append("[rlab-ray] cancelled while it ran")
                break
            if self._cancelled.is_set() and not result.execution.ok:
                # the cancel killed the candidate a moment before its worker: same outcome
                notes.append("[rlab-ray] cancelled while it ran")
                break
            return self._finish(request, result, notes, start)
        return self._failed(request, notes, start)

    def _attempt(self, job: WorkerJob, cpus: float) -> WorkerResult:
        """Run one Ray task for ``job``; system failures propagate as Ray's exceptions."""
        # submitting under the lock: cancel() sees every task, and the first submission
        # (which pickles and exports run_job) happens once
        with self._lock:
            if self._cancelled.is_set():
                raise rx.TaskCancelledError()
            ref = self._task.options(name=TASK_NAME, num_cpus=cpus, max_retries=0).remote(job)
            self._inflight.add(ref)
        try:
            return ray.get(ref)
        except rx.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, (NotVisibleError, SandboxUnavailableError)):
                raise SandboxUnavailableError(str(cause)) from None
            if isinstance(cause, OSError):  # the worker's disk or temp folder failed it
                raise rx.RaySystemError(f"on the worker: {cause}") from exc
            raise
        except UNAVAILABLE as exc:
            raise SandboxUnavailableError(
                f"The Ray cluster at {self.cluster.address} cannot run candidates: "
                f"{_first_line(exc)}"
            ) from None
        finally:
            with self._lock:
                self._inflight.discard(ref)

    def _write_log(self, request: SandboxRequest, before: list[str], body: bytes) -> int:
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        head = "".join(f"{line}\n" for line in before).encode()
        request.log_path.write_bytes(head + body)
        return len(head)

    def _finish(
        self, request: SandboxRequest, result: WorkerResult, notes: list[str], start: float
    ) -> Execution:
        if result.outputs:
            unpack_folder(result.outputs, request.output_dir)
        added = self._write_log(request, notes, result.log)
        execution = result.execution
        total = time.perf_counter() - start
        return execution.model_copy(
            update={
                "isolation": f"ray+{execution.isolation}",
                "start_overhead_s": round(max(0.0, total - execution.wall_s), 4),
                "log_tail": read_tail(request.log_path),
                "log_bytes": execution.log_bytes + added,
            }
        )

    def _failed(self, request: SandboxRequest, notes: list[str], start: float) -> Execution:
        size = self._write_log(request, notes, b"")
        return Execution(
            command=list(request.command),
            exit_code=None,
            wall_s=round(time.perf_counter() - start, 4),
            # the candidate died with its worker, or was stopped by cancel()
            killed_by="cancelled" if self._cancelled.is_set() else "signal",
            log_tail=read_tail(request.log_path),
            log_bytes=size,
            isolation=self.isolation_level(),
        )

    def cancel(self) -> None:
        """Kill every candidate running now (their Ray workers go with them); later runs too.

        The pending ``run`` calls return promptly with the candidate recorded as cancelled.
        """
        with self._lock:
            self._cancelled.set()
            inflight = list(self._inflight)
        for ref in inflight:
            try:
                ray.cancel(ref, force=True)
            except Exception as exc:  # already finished, or the cluster is gone
                log.debug("ray sandbox: cancel failed: %s", exc)

    def close(self) -> None:
        """Cancel what still runs, then stop the cluster if this sandbox started it."""
        self.cancel()
        self.cluster.close()
