"""The research loop (ARCHITECTURE §4): select, propose, edit, guard, run, score, record.

Every node that starts is finished with a record — evaluated or failed with its cause —
and journaled the moment it finishes, so the journal always holds every completed node.
Failed nodes get ``debug_tries`` repairs; a branch whose repairs fail too is closed as
``recovered_failure`` and never becomes a parent.

With ``workers > 1`` up to that many jobs (a step's proposal, evaluation and repairs) run
on worker threads at once; :mod:`rlab_core.parallel` says what each decision sees. The
journal, the tree and node ids are shared state behind one lock; candidates, the heavy
part, run outside it.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from rlab_core.agent_context import AgentContext, NodeSummary, RepairContext
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
from rlab_core.errors import AgentAuthError, AgentError, EditError, GuardRefusal, NothingToPropose
from rlab_core.evaluation import CandidateEvaluator
from rlab_core.guard import check_new_tokens
from rlab_core.interfaces import (
    Agent,
    PreparedTask,
    Sandbox,
    Step,
    StopRules,
    Strategy,
    StrategyState,
)
from rlab_core.journal import Journal, RunState, node_id
from rlab_core.parallel import Job, decision_tree
from rlab_core.plugins import PluginHost
from rlab_core.records import (
    Execution,
    Failure,
    FailureStage,
    Node,
    NodeKind,
    NodeStatus,
    Proposal,
    Score,
    Timing,
    Usage,
)
from rlab_core.run_folder import RunFolder
from rlab_core.tree import Tree

EventSink = Callable[[dict[str, Any]], None]
#: A run whose agent keeps failing stops instead of burning its budget on nothing.
MAX_AGENT_FAILURES_IN_A_ROW = 5
#: How many of the best nodes an ``ensemble``-stage candidate is told to combine.
ENSEMBLE_TOP_K = 5


class RunInterrupted(Exception):
    """A worker's candidate was cancelled because the run is stopping (Ctrl-C, a fatal error)."""


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
        self.evaluator = CandidateEvaluator(config=config, run=run, task=task, sandbox=sandbox)
        # shared state (journal, tree, ids, jobs) is touched under this lock only
        self._lock = threading.RLock()
        self._agent_lock: Any = (
            contextlib.nullcontext() if agent.concurrent_calls else threading.Lock()
        )
        self.workers = config.workers
        self._jobs: list[Job] = []
        self._visible = 0  # decisions see the results of self._jobs[:self._visible]
        self._iteration = self.tree.iterations_used()
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ events

    def emit(self, event_type: str, **payload: Any) -> dict[str, Any]:
        with self._lock:
            event = self.journal.append(event_type, **payload)
            self.host.notify(event, self.run.root)
            if self.on_event is not None:
                self.on_event(event)
            return event

    def elapsed_s(self) -> float:
        return self.state.elapsed_s + (time.time() - self.session_start)

    def progress(self):
        """Budget use so far; a running job holds one iteration until its first node is in."""
        with self._lock:
            progress = progress_of(self.tree, self.config, self.elapsed_s())
            progress.iterations_used += sum(
                1 for job in self._jobs if job.holds_budget and not job.done
            )
            return progress

    def _new_id(self) -> str:
        with self._lock:
            self.state.max_node_number += 1
            return node_id(self.state.max_node_number)

    def _next_iteration(self) -> int:
        with self._lock:
            self._iteration += 1
            return self._iteration

    # ------------------------------------------------------------------ main loop

    def run_search(self) -> str:
        """Search until a stop reason; return it (it is also in the journal)."""
        if self.workers > 1:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="rlab-worker")
        try:
            reason = self._search()
            self._wait_for(self._open_jobs())
        except AgentAuthError as exc:
            self._abort()
            # the run cannot go on without new credentials: say so in the journal first
            self.emit("run_stopped", reason=f"agent credentials refused: {exc}", best=None)
            raise
        except BaseException:
            self._abort()
            raise
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
        best = self.tree.best()
        self.emit("run_stopped", reason=reason, best=best.id if best else None)
        return reason

    def _abort(self) -> None:
        """Stop running candidates (Ctrl-C, a fatal error): their nodes stay unfinished."""
        if self._open_jobs():
            self.sandbox.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _search(self) -> str:
        self._evaluate_seeds()
        while True:
            self._raise_worker_errors()
            if len(self._open_jobs()) >= self.workers:
                self._wait_for(self._open_jobs(), first=True)
                continue
            view, pending = self._decision_view()
            reason = self._stop_reason(view)
            if reason is not None:
                return reason
            steps = self.strategy.next_steps(self._strategy_state(view, pending), capacity=1)
            if not steps:
                if self._visible < len(self._jobs):
                    self._reveal_one()  # an older job's result may open a new parent
                    continue
                return (
                    "nothing left to expand: the agent has no untried change for any evaluated node"
                )
            self._dispatch(steps[0], view, pending)

    # ------------------------------------------------------------------ jobs

    def _open_jobs(self) -> list[Job]:
        with self._lock:
            return [job for job in self._jobs if not job.done]

    def _wait_for(self, jobs: list[Job], *, first: bool = False) -> None:
        futures = [job.future for job in jobs if job.future is not None]
        if futures:
            wait(futures, return_when=FIRST_COMPLETED if first else "ALL_COMPLETED")
        self._raise_worker_errors()

    def _raise_worker_errors(self) -> None:
        """Re-raise, on the loop's thread, what a worker could not handle (a bug, a dead sandbox)."""
        for job in self._jobs:
            if job.future is not None and job.future.done() and job.future.exception():
                raise job.future.exception()  # type: ignore[misc]

    def _submit(self, job: Job, work: Callable[[], None]) -> None:
        with self._lock:
            self._jobs.append(job)
        if self._pool is None:
            work()  # one worker: run inline, exactly the sequential search
        else:
            job.future = self._pool.submit(work)

    def _decision_view(self) -> tuple[Tree, list[Job]]:
        """The tree the next decision sees and the jobs it sees as running."""
        if self.config.parallel_order == "reproducible":
            # decision k sees jobs numbered k - workers and below, whatever else finished
            needed = len(self._jobs) - self.workers + 1
            while self._visible < needed:
                self._reveal_one()
        else:
            with self._lock:
                while self._visible < len(self._jobs) and self._jobs[self._visible].done:
                    self._visible += 1
        with self._lock:
            if self.workers == 1:
                return self.tree, []  # finishing order is dispatch order: the real tree
            if self.config.parallel_order == "reproducible":
                pending = self._jobs[self._visible :]
                return decision_tree(self.tree, self._jobs, self._visible), pending
            pending = [job for job in self._jobs if not job.done]
            done = [job for job in self._jobs if job.done]
            return decision_tree(self.tree, [*done, *pending], len(done)), pending

    def _reveal_one(self) -> None:
        """Wait for the oldest job decisions cannot see yet, then let them see it."""
        job = self._jobs[self._visible]
        self._wait_for([job])
        with self._lock:
            self._visible += 1

    def _dispatch(self, step: Step, view: Tree, pending: list[Job]) -> None:
        parent = self.tree.get(step.parent_id)
        kind = NodeKind.DRAFT if step.kind == "draft" else NodeKind.IMPROVE
        stage = self.task.stage_for(self.progress())
        job = Job(number=len(self._jobs), kind=kind, parent_id=parent.id, step=step, stage=stage)
        context = self._context(parent, step.kind, view, pending, stage=stage)
        if self.agent.concurrent_calls:
            self._submit(job, lambda: self._propose_and_build(job, parent, context, kind))
            return
        # one proposal at a time, on this thread: the next decision sees this one's move
        started = time.perf_counter()
        outcome = self._propose(job, parent, context, kind, started)
        if outcome is None:
            if not job.node_ids:
                return  # parent exhausted: no job
            job.holds_budget = False
            with self._lock:
                self._jobs.append(job)  # an agent failure is a finished job with one node
            return
        job.proposal = outcome
        agent_s = time.perf_counter() - started
        self._submit(job, lambda: self._build_and_repair(job, parent, outcome, kind, agent_s))

    def _propose(
        self, job: Job, parent: Node, context: AgentContext, kind: NodeKind, started: float
    ) -> Proposal | None:
        """The agent's proposal, or ``None`` after recording why there is none."""
        try:
            with self._agent_lock:
                return self.agent.propose(context)
        except NothingToPropose as exc:
            with self._lock:
                self.state.exhausted.add(parent.id)
            self.emit("parent_exhausted", node_id=parent.id, reason=str(exc))
        except AgentError as exc:
            usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
            self._record_agent_failure(
                job, parent, kind, str(exc), time.perf_counter() - started, usage
            )
        return None

    def _propose_and_build(
        self, job: Job, parent: Node, context: AgentContext, kind: NodeKind
    ) -> None:
        started = time.perf_counter()
        proposal = self._propose(job, parent, context, kind, started)
        if proposal is not None:
            job.proposal = proposal
            agent_s = time.perf_counter() - started
            self._build_and_repair(job, parent, proposal, kind, agent_s)

    def _build_and_repair(
        self,
        job: Job,
        parent: Node | None,
        proposal: Proposal,
        kind: NodeKind,
        agent_s: float,
        seed_path: Path | None = None,
    ) -> None:
        node = self._build_node(
            job=job,
            parent=parent,
            proposal=proposal,
            kind=kind,
            agent_s=agent_s,
            seed_path=seed_path,
        )
        if node.status == NodeStatus.FAILED:
            self._repair(job, node)

    def _strategy_state(self, view: Tree, pending: list[Job]) -> StrategyState:
        iteration = view.iterations_used() + len(pending)
        running: dict[str, int] = {}
        for job in pending:
            if job.parent_id is not None:
                running[job.parent_id] = running.get(job.parent_id, 0) + 1
        with self._lock:
            exhausted = set(self.state.exhausted)
        return StrategyState(
            tree=view,
            progress=self.progress(),
            rules=self.rules,
            rng=random.Random(f"{self.config.seed}:{iteration}"),
            exhausted=frozenset(exhausted),
            running=running,
            running_drafts=sum(1 for job in pending if job.kind == NodeKind.DRAFT),
        )

    def _stop_reason(self, view: Tree) -> str | None:
        if not view.evaluated():
            return "no seed candidate ran successfully"
        recent = list(view)[-MAX_AGENT_FAILURES_IN_A_ROW:]
        if len(recent) == MAX_AGENT_FAILURES_IN_A_ROW and all(
            n.failure is not None and n.failure.stage == FailureStage.AGENT for n in recent
        ):
            return (
                f"the agent failed {MAX_AGENT_FAILURES_IN_A_ROW} times in a row "
                f"(last: {recent[-1].failure.message[:200]}); check its backend and options"
            )
        return budget_stop_reason(self.progress()) or self.strategy.stop_reason(
            self._strategy_state(view, [])
        )

    # ------------------------------------------------------------------ seeds

    def _evaluate_seeds(self) -> None:
        done = {n.move_id for n in self.tree.seeds()}
        for name, path, description in self._seed_sources():
            if name in done:
                continue
            proposal = Proposal(
                hypothesis=f"Seed candidate '{name}'" + (f": {description}" if description else ""),
                move_id=name,
            )
            job = Job(
                number=len(self._jobs),
                kind=NodeKind.SEED,
                proposal=proposal,
                stage=self.task.stage_for(self.progress()),
            )

            def work(job: Job = job, proposal: Proposal = proposal, path: Path = path) -> None:
                self._build_and_repair(job, None, proposal, NodeKind.SEED, 0.0, seed_path=path)

            self._submit(job, work)
        self._wait_for(self._open_jobs())
        with self._lock:
            self._visible = len(self._jobs)

    def _seed_sources(self) -> list[tuple[str, Path, str]]:
        if self.config.seed_candidate is not None:
            path = Path(self.config.seed_candidate)
            return [(path.name or "user-seed", path, "the user's own program")]
        return [(s.name, s.path, s.description) for s in self.task.seed_candidates()]

    # ------------------------------------------------------------------ one iteration

    def _context(
        self,
        parent: Node,
        step: str,
        view: Tree | None = None,
        pending: list[Job] | None = None,
        *,
        stage: str,
    ) -> AgentContext:
        progress = self.progress()
        with self._lock:
            tree = view if view is not None else self.tree
            summaries: list[NodeSummary] = tree.summaries()
            summaries += [job.running_summary() for job in pending or []]
            parent_summary = self.tree.summary(parent)
        return AgentContext(
            task=self.task.name,
            problem=self._problem,
            primary_metric=self.task.primary_metric,
            higher_is_better=self.task.higher_is_better,
            parent=parent_summary,
            parent_source=self.source_of(parent.id),
            tree=summaries,
            progress=progress,
            editable_files=list(self.task.editable_files),
            playbook=self._playbook,
            seed=self.config.seed,
            step=step,  # type: ignore[arg-type]
            stage=stage,
        )

    def _record_agent_failure(
        self, job: Job, parent: Node, kind: NodeKind, message: str, agent_s: float, usage: Usage
    ) -> None:
        new_id = self._new_id()
        job.node_ids.append(new_id)
        self.emit("node_started", id=new_id, parent_id=parent.id, kind=str(kind))
        node = Node(
            id=new_id,
            parent_id=parent.id,
            iteration=self._next_iteration(),
            kind=kind,
            status=NodeStatus.FAILED,
            hypothesis="(the agent produced no usable proposal)",
            failure=Failure(stage=FailureStage.AGENT, message=message),
            usage=usage,
            timing=Timing(agent_s=agent_s),
            created_at=time.time(),
            finished_at=time.time(),
        )
        self._finish(node, job)

    def _repair(self, job: Job, failed: Node) -> None:
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
                **self._context(current, "improve", stage=job.stage).model_dump(),
                original_hypothesis=failed.hypothesis,
                error=current.failure.message if current.failure else "",
                log_tail=current.failure.log_tail if current.failure else "",
                attempt=attempt,
            )
            started = time.perf_counter()
            try:
                with self._agent_lock:
                    proposal = self.agent.repair(context)
            except AgentError as exc:
                self._close_branch(attempts, f"repair failed: {exc}")
                return
            if proposal is None:
                self._close_branch(attempts, "the agent cannot repair this failure")
                return
            node = self._build_node(
                job=job,
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
        self._close_branch(attempts, f"repair failed after {self.config.debug_tries} attempt(s)")

    def _close_branch(self, node_ids: list[str], reason: str) -> None:
        with self._lock:
            self.emit("branch_closed", node_ids=node_ids, reason=reason)
            self.tree.close_branch(node_ids, reason)

    # ------------------------------------------------------------------ building a node

    def source_of(self, node_id_: str) -> SourceFiles:
        with self._lock:
            if node_id_ not in self._sources:
                if len(self._sources) > 64:
                    self._sources.pop(next(iter(self._sources)))
                self._sources[node_id_] = read_source(self.run.node_src(node_id_))
            return self._sources[node_id_]

    def _build_node(
        self,
        *,
        job: Job,
        parent: Node | None,
        proposal: Proposal,
        kind: NodeKind,
        agent_s: float,
        seed_path: Path | None = None,
        repair_of: str | None = None,
    ) -> Node:
        new_id = self._new_id()
        job.node_ids.append(new_id)
        iteration = 0 if kind == NodeKind.SEED else self._next_iteration()
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
        stage = job.stage
        if failure is None:
            with self._lock:
                top = self.tree.top_ids(ENSEMBLE_TOP_K)
            execution, score, failure = self.evaluator.evaluate(
                new_id, src_dir, timing, stage=stage, top_nodes=top
            )
            if execution is not None and execution.killed_by == "cancelled":
                # the run is being interrupted: the node stays unfinished, like a killed run's
                raise RunInterrupted(f"{new_id} was stopped by the interrupt")

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
            stage=stage,
            usage=proposal.usage,
            timing=timing,
            created_at=created,
        )
        return self._finish(node, job)

    def _finish(self, node: Node, job: Job) -> Node:
        book_start = time.perf_counter()
        node.finished_at = time.time()
        node_dir = self.run.node_dir(node.id)
        node_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self.tree.add(node)
            job.holds_budget = False
            payload = node.model_dump(mode="json")
            # what is measured here is stored with the node; the journal line and the
            # result.json copy written right after are the only bookkeeping not in the figure
            node.timing.bookkeeping_s = payload["timing"]["bookkeeping_s"] = round(
                time.perf_counter() - book_start, 4
            )
            self.emit("node_finished", node=payload)
        (node_dir / "result.json").write_text(json.dumps(payload, indent=1))
        return node
