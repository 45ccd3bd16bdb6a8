"""Evaluating one candidate: sandbox run(s), private outputs, contract check, validation score.

The loop hands over a node's source folder; this module runs it as the candidate contract
(docs/user-guide.md, "The candidate contract") says — a fresh working copy, the allow-listed environment, the smoke
stage first when the task asks for one — and turns what happened into an execution record,
a validation score or a failure with its cause. A storage error met by the harness's own
writes (a full disk, a read-only file system, a quota) is no such failure: it is raised as
:class:`~rlab_core.errors.StorageFullError` and stops the run.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlab_core.config import RunConfig
from rlab_core.edits import copy_source
from rlab_core.errors import ContractError, storage_errno
from rlab_core.guard import candidate_environment
from rlab_core.interfaces import PreparedTask, Sandbox
from rlab_core.outputs import take_outputs
from rlab_core.records import Execution, Failure, FailureStage, Score, Timing
from rlab_core.run_folder import RunFolder
from rlab_core.task_records import SandboxRequest

if TYPE_CHECKING:
    from rlab_core.acceptance import NoiseJudge

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def describe_execution_failure(execution: Execution, limits: SandboxRequest) -> str:
    """One sentence on why a candidate run failed."""
    if execution.killed_by == "timeout":
        return f"killed after {limits.timeout_s:g}s wall-clock timeout"
    if execution.killed_by == "memory":
        return f"killed for using more than {limits.memory_mb} MiB of memory (peak {execution.peak_memory_mb:.0f} MiB)"
    if execution.killed_by == "output":
        return f"killed for printing more than {limits.max_output_mb:g} MiB of output"
    if execution.killed_by == "disk":
        return (
            f"killed for writing more than {limits.disk_mb} MiB to its working, output and "
            "cache folders"
        )
    last = [line for line in execution.log_tail.strip().splitlines() if line.strip()]
    hint = f": {last[-1].strip()[:300]}" if last else ""
    if execution.killed_by == "signal":
        return f"killed by a signal{hint}"
    if execution.killed_by == "cancelled":
        return "stopped because the run was interrupted"
    return f"exited with code {execution.exit_code}{hint}"


@dataclass(frozen=True)
class CandidateSettings:
    """How every candidate of a run is started: limits, threads, seed, extra variables.

    The run's options where given, else the task's own limits; built once per run.
    """

    timeout_s: float
    memory_mb: int
    max_output_mb: float
    disk_mb: int
    outputs_mb: float
    smoke_timeout_s: float
    smoke: bool
    threads: int
    seed: int
    env_allow: tuple[str, ...] = ()

    @classmethod
    def for_task(cls, config: RunConfig, task: PreparedTask) -> CandidateSettings:
        """The settings of ``config`` (a run's options) over ``task``'s defaults."""
        limits = task.limits
        return cls(
            timeout_s=config.timeout_s or limits.timeout_s,
            memory_mb=config.memory_mb or limits.memory_mb,
            max_output_mb=config.max_output_mb or limits.max_output_mb,
            disk_mb=config.disk_mb or limits.disk_mb,
            outputs_mb=config.outputs_mb or limits.outputs_mb,
            smoke_timeout_s=limits.smoke_timeout_s,
            smoke=task.smoke_run if config.smoke_run is None else config.smoke_run,
            # the cores shared out among the candidates that run at once
            threads=config.threads or max(1, (os.cpu_count() or 1) // config.workers),
            seed=config.seed,
            env_allow=tuple(config.env_allow),
        )


class CandidateEvaluator:
    """Runs and scores the candidates of one run."""

    def __init__(
        self,
        *,
        settings: CandidateSettings,
        run: RunFolder,
        task: PreparedTask,
        sandbox: Sandbox[Any],
        judge: NoiseJudge | None = None,
    ) -> None:
        self.settings = settings
        self.run = run
        self.task = task
        self.sandbox = sandbox
        #: Measures each validation score's noise (replicate scores, standard error).
        self.judge = judge

    def _contract_env(
        self,
        node_id_: str,
        workdir: Path,
        output_dir: Path,
        stage: str,
        top_nodes: list[str],
        seed: int,
    ) -> dict[str, str]:
        threads = str(self.settings.threads)
        contract = {
            "RLAB_NODE_ID": node_id_,
            "RLAB_DATA_DIR": str(self.task.data_dir),
            "RLAB_OUTPUT_DIR": str(output_dir),
            "RLAB_CACHE_DIR": str(self.run.cache_dir),
            "RLAB_STAGE": stage,
            "RLAB_SEED": str(seed),
            "RLAB_THREADS": threads,
            "HOME": str(workdir),
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONHASHSEED": str(seed),
            "MPLBACKEND": "Agg",
            **dict.fromkeys(THREAD_VARIABLES, threads),
        }
        if stage == "ensemble":
            # the best evaluated nodes, best first: their cached predictions are combined
            contract["RLAB_TOP_NODES"] = ",".join(top_nodes)
        return candidate_environment(os.environ, contract, self.settings.env_allow)

    def _sandbox_request(
        self,
        node_id_: str,
        workdir: Path,
        output_dir: Path,
        log: Path,
        stage: str,
        top_nodes: list[str],
        seed: int,
    ) -> SandboxRequest:
        smoke = stage == "debug"
        return SandboxRequest(
            workdir=workdir,
            command=["python", "main.py", *(["--debug"] if smoke else [])],
            env=self._contract_env(node_id_, workdir, output_dir, stage, top_nodes, seed),
            data_dir=self.task.data_dir,
            output_dir=output_dir,
            cache_dir=self.run.cache_dir,
            log_path=log,
            hidden_paths=[
                *self.task.hidden_paths(),
                self.run.root,  # the run folder: other nodes, private predictions, the journal
            ],
            timeout_s=self.settings.smoke_timeout_s if smoke else self.settings.timeout_s,
            memory_mb=self.settings.memory_mb,
            max_output_mb=self.settings.max_output_mb,
            threads=self.settings.threads,
            disk_mb=self.settings.disk_mb,
            outputs_mb=self.settings.outputs_mb,
        )

    def evaluate(
        self,
        node_id_: str,
        src_dir: Path,
        timing: Timing,
        *,
        stage: str = "full",
        top_nodes: list[str] | None = None,
        seed: int | None = None,
        home: Path | None = None,
        smoke: bool = True,
    ) -> tuple[Execution | None, Score | None, Failure | None]:
        """Run the candidate in ``src_dir`` and return (execution, validation score, failure).

        Exactly one of score and failure is set. ``timing`` receives the sandbox start,
        candidate and scoring seconds. ``stage`` is the candidate's ``RLAB_STAGE`` after the
        smoke run; ``top_nodes`` (best first) reach it as ``RLAB_TOP_NODES`` at ``ensemble``.
        ``seed`` replaces the run's ``RLAB_SEED`` and ``home`` the node's folder (with its
        private outputs in ``home/private``): how a finalist is re-run with another seed;
        such a run's noise is not measured, and it gets no smoke run (its program ran).
        ``smoke=False`` skips the task's smoke run for a program whose code already ran: a
        tuning trial only sets declared values, a promotion re-runs a screen unchanged.

        The candidate works in ``tmp/<node>/`` (its source copy and its output folder); when
        it has exited, its outputs are taken as data into ``nodes/<node>/outputs`` (and the
        test side into ``private/``), folders no candidate can write, and only that copy is
        validated and scored.
        """
        node_dir = home if home is not None else self.run.node_dir(node_id_)
        private_dir = home / "private" if home is not None else self.run.private_node_dir(node_id_)
        scratch = self.run.scratch_dir / node_id_
        try:
            # the harness's own writes: a full disk there stops the run, it fails no candidate
            with self.run.storage_guard(node_dir):
                execution, score, failure = self._run_and_score(
                    node_id_,
                    src_dir,
                    scratch,
                    node_dir,
                    private_dir,
                    timing,
                    stage=stage,
                    top=list(top_nodes or []),
                    seed=self.settings.seed if seed is None else seed,
                    measure=home is None,
                    smoke=smoke and home is None,
                )
        finally:
            # rmtree never follows a link, so whatever the candidate planted goes with it
            shutil.rmtree(scratch, ignore_errors=True)
        if (
            failure is not None
            and failure.stage in (FailureStage.RUN, FailureStage.SMOKE)
            and (execution is None or execution.killed_by not in ("disk", "cancelled"))
        ):
            # a full disk shows as a candidate that failed, its log empty: with the
            # candidate's own files gone, a write of the harness's tells the two apart (a
            # candidate that filled the disk itself was its own failure)
            self.run.probe_storage(node_dir)
        return execution, score, failure

    def _run_and_score(
        self,
        node_id_: str,
        src_dir: Path,
        scratch: Path,
        node_dir: Path,
        private_dir: Path,
        timing: Timing,
        *,
        stage: str,
        top: list[str],
        seed: int,
        measure: bool,
        smoke: bool,
    ) -> tuple[Execution | None, Score | None, Failure | None]:
        """The smoke run (if asked), the run, then the outputs' contract and score."""
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        if self.settings.smoke and smoke:
            smoke_out = scratch / "smoke_outputs"
            smoke_out.mkdir()
            execution, failure = self._run_stage(
                node_id_,
                src_dir,
                scratch,
                smoke_out,
                node_dir / "smoke_log.txt",
                "debug",
                timing,
                top,
                seed,
            )
            if failure is not None:
                failure.stage = FailureStage.SMOKE
                return execution, None, failure
        candidate_out = scratch / "outputs"
        candidate_out.mkdir()
        execution, failure = self._run_stage(
            node_id_,
            src_dir,
            scratch,
            candidate_out,
            node_dir / "log.txt",
            stage,
            timing,
            top,
            seed,
        )
        if failure is not None:
            return execution, None, failure
        score_start = time.perf_counter()
        try:
            return self._score(execution, candidate_out, node_dir, private_dir, measure=measure)
        finally:
            timing.scoring_s = round(time.perf_counter() - score_start, 4)

    def _score(
        self,
        execution: Execution,
        candidate_out: Path,
        node_dir: Path,
        private_dir: Path,
        *,
        measure: bool,
    ) -> tuple[Execution, Score | None, Failure | None]:
        """Take the outputs as data, check the contract, score validation and its noise."""

        def contract_failure(message: str) -> tuple[Execution, None, Failure]:
            failure = Failure(
                stage=FailureStage.CONTRACT, message=message, log_tail=execution.log_tail
            )
            return execution, None, failure

        if execution.output_problem:
            return contract_failure(execution.output_problem)
        output_dir = node_dir / "outputs"
        shutil.rmtree(output_dir, ignore_errors=True)
        try:
            take_outputs(candidate_out, output_dir, max_bytes=int(self.settings.outputs_mb * 2**20))
            self._move_private_outputs(output_dir, private_dir)
            problems = self.task.validate_outputs(output_dir, "val")
            if problems:
                return contract_failure("; ".join(problems))
            score = self.task.score(output_dir, "val")
            if measure and self.judge is not None:
                self.judge.measure(node_dir, output_dir, score)
            return execution, score, None
        except ContractError as exc:
            return contract_failure(str(exc))
        except Exception as exc:  # the outputs broke the scorer: keep the node, say why
            if storage_errno(exc) is not None:
                # the harness's copy (or the scorer's own files) met a full disk: the run's
                raise self.run.storage_error(exc, output_dir) from exc
            failure = Failure(
                stage=FailureStage.SCORE,
                message=f"scoring failed: {type(exc).__name__}: {exc}",
                log_tail=execution.log_tail,
            )
            return execution, None, failure

    def _run_stage(
        self,
        node_id_: str,
        src_dir: Path,
        scratch: Path,
        output_dir: Path,
        log: Path,
        stage: str,
        timing: Timing,
        top_nodes: list[str],
        seed: int,
    ) -> tuple[Execution, Failure | None]:
        start = time.perf_counter()
        workdir = scratch / "work"
        shutil.rmtree(workdir, ignore_errors=True)
        copy_source(src_dir, workdir)
        request = self._sandbox_request(node_id_, workdir, output_dir, log, stage, top_nodes, seed)
        prepared = time.perf_counter() - start
        execution = self.sandbox.run(request)
        timing.sandbox_start_s = round(
            timing.sandbox_start_s + prepared + execution.start_overhead_s, 4
        )
        timing.candidate_s = round(timing.candidate_s + execution.wall_s, 4)
        if execution.ok:
            return execution, None
        return execution, Failure(
            stage=FailureStage.RUN,
            message=describe_execution_failure(execution, request),
            log_tail=execution.log_tail[-2000:],
        )

    def _move_private_outputs(self, output_dir: Path, private_dir: Path) -> None:
        """Move test-side predictions out of reach before anything reads the outputs.

        ``output_dir`` is the harness's own copy: only regular files and folders, so the
        glob and the rename touch nothing a candidate chose.
        """
        for pattern in self.task.private_outputs:
            for path in sorted(output_dir.glob(pattern)):
                target = private_dir / path.relative_to(output_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
