"""Running one candidate folder exactly as the loop does, for plugin tests."""

from __future__ import annotations

import os
from pathlib import Path

from rlab_core.interfaces import PreparedTask, Sandbox
from rlab_core.outputs import OutputsRefused, take_outputs
from rlab_core.records import Execution
from rlab_core.task_records import SandboxRequest


def run_candidate(
    prepared: PreparedTask,
    source: Path,
    sandbox: Sandbox,
    tmp: Path,
    *,
    threads: int = 1,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    stage: str = "full",
    extra_env: dict[str, str] | None = None,
) -> tuple[Execution, Path]:
    """Run the candidate folder ``source`` as the loop would; return (execution, output folder).

    The candidate gets a fresh working copy, the contract variables and the task's limits
    and hidden paths, so plugin tests exercise the same view a real run gives. When it ran
    cleanly, the folder returned is its outputs taken as data, as the loop scores them
    (:class:`~rlab_core.outputs.OutputsRefused` when they hold a link or the like);
    otherwise the folder it wrote into. ``stage``
    is its ``RLAB_STAGE``; ``extra_env`` adds contract variables such as ``RLAB_NODE_ID``.
    """
    from rlab_core.edits import copy_source
    from rlab_core.guard import candidate_environment

    work, out, cache = tmp / "work", tmp / "out", tmp / "cache"
    copy_source(source, work)
    out.mkdir(parents=True)
    cache.mkdir(parents=True)
    contract = {
        "RLAB_DATA_DIR": str(prepared.data_dir),
        "RLAB_OUTPUT_DIR": str(out),
        "RLAB_CACHE_DIR": str(cache),
        "RLAB_STAGE": stage,
        "RLAB_SEED": "0",
        "RLAB_THREADS": str(threads),
        "HOME": str(work),
        **(extra_env or {}),
    }
    execution = sandbox.run(
        SandboxRequest(
            workdir=work,
            command=["python", "main.py"],
            env=candidate_environment(os.environ, contract),
            data_dir=prepared.data_dir,
            output_dir=out,
            cache_dir=cache,
            log_path=tmp / "log.txt",
            hidden_paths=prepared.hidden_paths(),
            timeout_s=timeout_s or prepared.limits.timeout_s,
            memory_mb=memory_mb or prepared.limits.memory_mb,
            max_output_mb=prepared.limits.max_output_mb,
            threads=threads,
            disk_mb=prepared.limits.disk_mb,
            outputs_mb=prepared.limits.outputs_mb,
        )
    )
    if not execution.ok:
        return execution, out
    # what the loop scores: the outputs taken as data (raises OutputsRefused on a link)
    if execution.output_problem:
        raise OutputsRefused(execution.output_problem)
    taken = tmp / "taken"
    take_outputs(out, taken, max_bytes=int(prepared.limits.outputs_mb * 2**20))
    return execution, taken
