"""The research loop (ARCHITECTURE §4): select, propose, edit, guard, run, score, record.

Every node that starts is finished with a record — evaluated or failed with its cause —
before the next one starts, so the journal always holds every completed node. Failed
nodes get ``debug_tries`` repairs; a branch whose repairs fail too is closed as
``recovered_failure`` and never becomes a parent.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlab_core.budget import budget_stop_reason, progress_of
from rlab_core.config import RunConfig
from rlab_core.edits import (
    SourceFiles,
    apply_edits,
    apply_rewrite,
    check_boundary,
    copy_source,
    read_source,
    unified_diff,
    write_source,
)
from rlab_core.errors import AgentError, ContractError, EditError, GuardRefusal, NothingToPropose
from rlab_core.guard import candidate_environment, check_new_tokens
from rlab_core.interfaces import (
    Agent,
    AgentContext,
    PreparedTask,
    RepairContext,
    Sandbox,
    SandboxRequest,
    Step,
    StopRules,
    Strategy,
    StrategyState,
)
from rlab_core.journal import Journal, RunState, node_id
from rlab_core.models import (
    Execution,
    Failure,
    FailureStage,
    Node,
    NodeKind,
    NodeStatus,
    Proposal,
    Score,
    Timing,
)
from rlab_core.plugins import PluginHost
from rlab_core.run_folder import RunFolder

EventSink = Callable[[dict[str, Any]], None]
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
    if execution.killed_by == "signal":
        return "killed by a signal"
    last = [line for line in execution.log_tail.strip().splitlines() if line.strip()]
    hint = f": {last[-1].strip()[:300]}" if last else ""
    return f"exited with code {execution.exit_code}{hint}"


class ResearchLoop:
    """Runs one search to its stop reason, appending every event to the journal."""

    def __init__(
        self,
        *,
        host: PluginHost,
        config: RunConfig,
        run: RunFolder,
        task: PreparedTask,
        agent: Agent,
        strategy: Strategy,
        sandbox: Sandbox,
        journal: Journal,
        state: RunState,
        on_event: EventSink | None = None,
    ) -> None:
        self.host = host
        self.config = config
        self.run = run
        self.task = task
        self.agent = agent
        self.strategy = strategy
        self.sandbox = sandbox
        self.journal = journal
        self.state = state
        self.tree = state.tree
        self.tree.higher_is_better = task.higher_is_better
        self.on_event = on_event
        self.session_start = time.time()
        self.rules = StopRules(
            config.epsilon, config.window, config.min_iterations, config.target_val
        )
        self._problem = task.context()
        self._playbook = task.playbook()
        self._sources: dict[str, SourceFiles] = {}
        limits = task.limits
        self.timeout_s = config.timeout_s or limits.timeout_s
        self.memory_mb = config.memory_mb or limits.memory_mb
        self.max_output_mb = config.max_output_mb or limits.max_output_mb
        self.smoke = task.smoke_run if config.smoke_run is None else config.smoke_run
        self.threads = config.threads or max(1, (os.cpu_count() or 1) // config.workers)

    # ------------------------------------------------------------------ events

    def emit(self, event_type: str, **payload: Any) -> dict[str, Any]:
        event = self.journal.append(event_type, **payload)
        self.host.notify(event, self.run.root)
        if self.on_event is not None:
            self.on_event(event)
        return event

    def elapsed_s(self) -> float:
        return self.state.elapsed_s + (time.time() - self.session_start)

    def progress(self):
        return progress_of(self.tree, self.config, self.elapsed_s())

    def _new_id(self) -> str:
        self.state.max_node_number += 1
        return node_id(self.state.max_node_number)

    # ------------------------------------------------------------------ main loop

    def run_search(self) -> str:
        """Search until a stop reason; return it (it is also in the journal)."""
        self._evaluate_seeds()
        while True:
            reason = self._stop_reason()
            if reason is None:
                steps = self.strategy.next_steps(self._strategy_state(), capacity=1)
                if not steps:
                    reason = "nothing left to expand: the agent has no untried change for any evaluated node"
            if reason is not None:
                break
            for step in steps:
                self._expand(step)
        self.emit(
            "run_stopped", reason=reason, best=(self.tree.best().id if self.tree.best() else None)
        )
        return reason

    def _strategy_state(self) -> StrategyState:
        iteration = self.tree.iterations_used()
        return StrategyState(
            tree=self.tree,
            progress=self.progress(),
            rules=self.rules,
            rng=random.Random(f"{self.config.seed}:{iteration}"),
            extra={"exhausted": self.state.exhausted},
        )

    def _stop_reason(self) -> str | None:
        if not self.tree.evaluated():
            return "no seed candidate ran successfully; see the seed nodes' logs (`rlab show`)"
        return budget_stop_reason(self.progress()) or self.strategy.stop_reason(
            self._strategy_state()
        )

    # ------------------------------------------------------------------ seeds

    def _evaluate_seeds(self) -> None:
        done = {n.move_id for n in self.tree.seeds()}
        seeds = self._seed_sources()
        for name, path, description in seeds:
            if name in done:
                continue
            proposal = Proposal(
                hypothesis=f"Seed candidate '{name}'" + (f": {description}" if description else ""),
                move_id=name,
            )
            node = self._build_node(
                parent=None, proposal=proposal, kind=NodeKind.SEED, seed_path=path, agent_s=0.0
            )
            if node.status == NodeStatus.FAILED:
                self._repair(node)

    def _seed_sources(self) -> list[tuple[str, Path, str]]:
        if self.config.seed_candidate is not None:
            path = Path(self.config.seed_candidate)
            return [(path.name or "user-seed", path, "the user's own program")]
        return [(s.name, s.path, s.description) for s in self.task.seed_candidates()]

    # ------------------------------------------------------------------ one iteration

    def _context(self, parent: Node, step: str) -> AgentContext:
        return AgentContext(
            task=self.task.name,
            problem=self._problem,
            primary_metric=self.task.primary_metric,
            higher_is_better=self.task.higher_is_better,
            parent=self.tree.summary(parent),
            parent_source=self.source_of(parent.id),
            tree=self.tree.summaries(),
            progress=self.progress(),
            editable_files=list(self.task.editable_files),
            playbook=self._playbook,
            seed=self.config.seed,
            step=step,  # type: ignore[arg-type]
        )

    def _expand(self, step: Step) -> None:
        parent = self.tree.get(step.parent_id)
        context = self._context(parent, step.kind)
        kind = NodeKind.DRAFT if step.kind == "draft" else NodeKind.IMPROVE
        started = time.perf_counter()
        try:
            proposal = self.agent.propose(context)
        except NothingToPropose as exc:
            self.state.exhausted.add(parent.id)
            self.emit("parent_exhausted", node_id=parent.id, reason=str(exc))
            return
        except AgentError as exc:
            self._record_agent_failure(parent, kind, str(exc), time.perf_counter() - started)
            return
        node = self._build_node(
            parent=parent, proposal=proposal, kind=kind, agent_s=time.perf_counter() - started
        )
        if node.status == NodeStatus.FAILED:
            self._repair(node)

    def _record_agent_failure(
        self, parent: Node, kind: NodeKind, message: str, agent_s: float
    ) -> None:
        new_id = self._new_id()
        self.emit("node_started", id=new_id, parent_id=parent.id, kind=str(kind))
        node = Node(
            id=new_id,
            parent_id=parent.id,
            iteration=self.tree.iterations_used() + 1,
            kind=kind,
            status=NodeStatus.FAILED,
            hypothesis="(the agent produced no usable proposal)",
            failure=Failure(stage=FailureStage.AGENT, message=message),
            timing=Timing(agent_s=agent_s),
            created_at=time.time(),
            finished_at=time.time(),
        )
        self._finish(node)

    def _repair(self, failed: Node) -> None:
        """Give a failed node up to ``debug_tries`` repairs; close the branch if they fail."""
        if (
            self.config.debug_tries <= 0
            or failed.failure is None
            or failed.failure.stage == FailureStage.AGENT
        ):
            return
        attempts = [failed.id]
        current = failed
        for attempt in range(1, self.config.debug_tries + 1):
            if budget_stop_reason(self.progress()):
                return  # out of budget: the branch stays failed, not closed
            context = RepairContext(
                **self._context(current, "improve").model_dump(),
                original_hypothesis=failed.hypothesis,
                error=current.failure.message if current.failure else "",
                log_tail=current.failure.log_tail if current.failure else "",
                attempt=attempt,
            )
            started = time.perf_counter()
            try:
                proposal = self.agent.repair(context)
            except AgentError as exc:
                self.emit("branch_closed", node_ids=attempts, reason=f"repair failed: {exc}")
                self.tree.close_branch(attempts, str(exc))
                return
            if proposal is None:
                reason = "the agent cannot repair this failure"
                self.emit("branch_closed", node_ids=attempts, reason=reason)
                self.tree.close_branch(attempts, reason)
                return
            node = self._build_node(
                parent=current,
                proposal=proposal,
                kind=NodeKind.DEBUG,
                agent_s=time.perf_counter() - started,
                repair_of=failed.id,
            )
            if node.status == NodeStatus.EVALUATED:
                return
            attempts.append(node.id)
            current = node
        reason = f"repair failed after {self.config.debug_tries} attempt(s)"
        self.emit("branch_closed", node_ids=attempts, reason=reason)
        self.tree.close_branch(attempts, reason)

    # ------------------------------------------------------------------ building a node

    def source_of(self, node_id_: str) -> SourceFiles:
        if node_id_ not in self._sources:
            if len(self._sources) > 64:
                self._sources.pop(next(iter(self._sources)))
            self._sources[node_id_] = read_source(self.run.node_src(node_id_))
        return self._sources[node_id_]

    def _build_node(
        self,
        *,
        parent: Node | None,
        proposal: Proposal,
        kind: NodeKind,
        agent_s: float,
        seed_path: Path | None = None,
        repair_of: str | None = None,
    ) -> Node:
        new_id = self._new_id()
        iteration = 0 if kind == NodeKind.SEED else self.tree.iterations_used() + 1
        self.emit(
            "node_started",
            id=new_id,
            parent_id=parent.id if parent else None,
            kind=str(kind),
            iteration=iteration,
            hypothesis=proposal.hypothesis,
        )
        created = time.time()
        timing = Timing(agent_s=round(agent_s, 4))
        node_dir = self.run.node_dir(new_id)
        src_dir = node_dir / "src"
        node_dir.mkdir(parents=True, exist_ok=True)
        failure: Failure | None = None
        diff, changed = "", []

        edit_start = time.perf_counter()
        if parent is None:
            copy_source(seed_path, src_dir)  # type: ignore[arg-type]
        else:
            parent_files = self.source_of(parent.id)
            copy_source(self.run.node_src(parent.id), src_dir)
            try:
                if proposal.files is not None:
                    child_files = apply_rewrite(
                        parent_files, proposal.files, self.task.editable_files
                    )
                    child_files = apply_edits(child_files, proposal.edits, self.task.editable_files)
                else:
                    child_files = apply_edits(
                        parent_files, proposal.edits, self.task.editable_files
                    )
                changed = check_boundary(parent_files, child_files, self.task.editable_files)
                diff = unified_diff(parent_files, child_files)
                # guard before writing: a refused node keeps its parent's source, so a later
                # repair of it cannot inherit the refused tokens as "the parent had them"
                check_new_tokens(
                    child_files, parent_files, self.task.forbidden_tokens, only=changed
                )
                write_source(src_dir, child_files, changed)
            except EditError as exc:
                failure = Failure(stage=FailureStage.EDIT, message=str(exc))
            except GuardRefusal as exc:
                failure = Failure(stage=FailureStage.GUARD, message=str(exc))
            if failure is None and not changed:
                failure = Failure(stage=FailureStage.EDIT, message="The proposal changes nothing.")
        (node_dir / "diff.patch").write_text(diff)
        timing.edit_s = round(time.perf_counter() - edit_start, 4)

        execution: Execution | None = None
        score: Score | None = None
        if failure is None:
            execution, score, failure = self._execute(new_id, src_dir, timing)

        node = Node(
            id=new_id,
            parent_id=parent.id if parent else None,
            iteration=iteration,
            kind=kind,
            status=NodeStatus.EVALUATED if failure is None else NodeStatus.FAILED,
            hypothesis=proposal.hypothesis,
            rationale=proposal.rationale,
            move_id=proposal.move_id,
            edits=proposal.edits,
            diff=diff,
            changed_files=changed,
            execution=execution,
            score=score,
            failure=failure,
            repair_of=repair_of,
            usage=proposal.usage,
            timing=timing,
            created_at=created,
        )
        return self._finish(node)

    def _finish(self, node: Node) -> Node:
        book_start = time.perf_counter()
        node.finished_at = time.time()
        node_dir = self.run.node_dir(node.id)
        node_dir.mkdir(parents=True, exist_ok=True)
        self.tree.add(node)
        payload = node.model_dump(mode="json")
        # what is measured here is stored with the node; the journal line and the
        # result.json copy written right after are the only bookkeeping not in the figure
        node.timing.bookkeeping_s = payload["timing"]["bookkeeping_s"] = round(
            time.perf_counter() - book_start, 4
        )
        self.emit("node_finished", node=payload)
        (node_dir / "result.json").write_text(json.dumps(payload, indent=1))
        return node

    # ------------------------------------------------------------------ running a candidate

    def _contract_env(self, workdir: Path, output_dir: Path, stage: str) -> dict[str, str]:
        threads = str(self.threads)
        contract = {
            "RLAB_DATA_DIR": str(self.task.data_dir),
            "RLAB_OUTPUT_DIR": str(output_dir),
            "RLAB_CACHE_DIR": str(self.run.cache_dir),
            "RLAB_STAGE": stage,
            "RLAB_SEED": str(self.config.seed),
            "RLAB_THREADS": threads,
            "HOME": str(workdir),
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONHASHSEED": str(self.config.seed),
            "MPLBACKEND": "Agg",
            **dict.fromkeys(THREAD_VARIABLES, threads),
        }
        return candidate_environment(os.environ, contract, self.config.env_allow)

    def _sandbox_request(
        self, node_id_: str, workdir: Path, output_dir: Path, log: Path, stage: str
    ) -> SandboxRequest:
        smoke = stage == "debug"
        return SandboxRequest(
            workdir=workdir,
            command=["python", "main.py", *(["--debug"] if smoke else [])],
            env=self._contract_env(workdir, output_dir, stage),
            data_dir=self.task.data_dir,
            output_dir=output_dir,
            cache_dir=self.run.cache_dir,
            log_path=log,
            hidden_paths=[
                *self.task.hidden_paths(),
                self.run.root,  # the run folder: other nodes, private predictions, the journal
            ],
            timeout_s=self.task.limits.smoke_timeout_s if smoke else self.timeout_s,
            memory_mb=self.memory_mb,
            max_output_mb=self.max_output_mb,
        )

    def _execute(
        self, node_id_: str, src_dir: Path, timing: Timing
    ) -> tuple[Execution | None, Score | None, Failure | None]:
        node_dir = self.run.node_dir(node_id_)
        output_dir = node_dir / "outputs"
        workdir = self.run.scratch_dir / node_id_
        try:
            if self.smoke:
                smoke_out = node_dir / "smoke_outputs"
                smoke_out.mkdir(exist_ok=True)
                execution, failure = self._run_stage(
                    node_id_,
                    src_dir,
                    workdir,
                    smoke_out,
                    node_dir / "smoke_log.txt",
                    "debug",
                    timing,
                )
                shutil.rmtree(smoke_out, ignore_errors=True)
                if failure is not None:
                    failure.stage = FailureStage.SMOKE
                    return execution, None, failure
            output_dir.mkdir(exist_ok=True)
            execution, failure = self._run_stage(
                node_id_, src_dir, workdir, output_dir, node_dir / "log.txt", "full", timing
            )
            if failure is not None:
                return execution, None, failure
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

        score_start = time.perf_counter()
        try:
            self._move_private_outputs(node_id_, output_dir)
            problems = self.task.validate_outputs(output_dir, "val")
            if problems:
                return (
                    execution,
                    None,
                    Failure(
                        stage=FailureStage.CONTRACT,
                        message="; ".join(problems),
                        log_tail=execution.log_tail,
                    ),
                )
            score = self.task.score(output_dir, "val")
        except ContractError as exc:
            return (
                execution,
                None,
                Failure(stage=FailureStage.CONTRACT, message=str(exc), log_tail=execution.log_tail),
            )
        except Exception as exc:  # the outputs broke the scorer: keep the node, say why
            return (
                execution,
                None,
                Failure(
                    stage=FailureStage.SCORE,
                    message=f"scoring failed: {type(exc).__name__}: {exc}",
                    log_tail=execution.log_tail,
                ),
            )
        finally:
            timing.scoring_s = round(time.perf_counter() - score_start, 4)
        return execution, score, None

    def _run_stage(
        self,
        node_id_: str,
        src_dir: Path,
        workdir: Path,
        output_dir: Path,
        log: Path,
        stage: str,
        timing: Timing,
    ) -> tuple[Execution, Failure | None]:
        start = time.perf_counter()
        shutil.rmtree(workdir, ignore_errors=True)
        copy_source(src_dir, workdir)
        request = self._sandbox_request(node_id_, workdir, output_dir, log, stage)
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

    def _move_private_outputs(self, node_id_: str, output_dir: Path) -> None:
        """Move test-side predictions out of reach before anything reads the outputs."""
        for pattern in self.task.private_outputs:
            for path in sorted(output_dir.glob(pattern)):
                target = self.run.private_node_dir(node_id_) / path.relative_to(output_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(path), str(target))
