"""The research loop (ARCHITECTURE §4): select, propose, edit, guard, run, score, record.

Every node that starts is finished with a record — evaluated or failed with its cause —
before the next one starts, so the journal always holds every completed node. Failed
nodes get ``debug_tries`` repairs; a branch whose repairs fail too is closed as
``recovered_failure`` and never becomes a parent.
"""

from __future__ import annotations

import json
import random
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
from rlab_core.errors import AgentAuthError, AgentError, EditError, GuardRefusal, NothingToPropose
from rlab_core.evaluation import CandidateEvaluator
from rlab_core.guard import check_new_tokens
from rlab_core.interfaces import (
    Agent,
    AgentContext,
    PreparedTask,
    RepairContext,
    Sandbox,
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
    Usage,
)
from rlab_core.plugins import PluginHost
from rlab_core.run_folder import RunFolder

EventSink = Callable[[dict[str, Any]], None]
#: A run whose agent keeps failing stops instead of burning its budget on nothing.
MAX_AGENT_FAILURES_IN_A_ROW = 5
#: How many of the best nodes an ``ensemble``-stage candidate is told to combine.
ENSEMBLE_TOP_K = 5


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
        try:
            reason = self._search()
        except AgentAuthError as exc:
            # the run cannot go on without new credentials: say so in the journal first
            self.emit("run_stopped", reason=f"agent credentials refused: {exc}", best=None)
            raise
        best = self.tree.best()
        self.emit("run_stopped", reason=reason, best=best.id if best else None)
        return reason

    def _search(self) -> str:
        self._evaluate_seeds()
        while True:
            reason = self._stop_reason()
            if reason is not None:
                return reason
            steps = self.strategy.next_steps(self._strategy_state(), capacity=1)
            if not steps:
                return (
                    "nothing left to expand: the agent has no untried change for any evaluated node"
                )
            for step in steps:
                self._expand(step)

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
        recent = list(self.tree)[-MAX_AGENT_FAILURES_IN_A_ROW:]
        if len(recent) == MAX_AGENT_FAILURES_IN_A_ROW and all(
            n.failure is not None and n.failure.stage == FailureStage.AGENT for n in recent
        ):
            return (
                f"the agent failed {MAX_AGENT_FAILURES_IN_A_ROW} times in a row "
                f"(last: {recent[-1].failure.message[:200]}); check its backend and options"
            )
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
        progress = self.progress()
        return AgentContext(
            task=self.task.name,
            problem=self._problem,
            primary_metric=self.task.primary_metric,
            higher_is_better=self.task.higher_is_better,
            parent=self.tree.summary(parent),
            parent_source=self.source_of(parent.id),
            tree=self.tree.summaries(),
            progress=progress,
            editable_files=list(self.task.editable_files),
            playbook=self._playbook,
            seed=self.config.seed,
            step=step,  # type: ignore[arg-type]
            stage=self.task.stage_for(progress),
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
            usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
            self._record_agent_failure(parent, kind, str(exc), time.perf_counter() - started, usage)
            return
        node = self._build_node(
            parent=parent, proposal=proposal, kind=kind, agent_s=time.perf_counter() - started
        )
        if node.status == NodeStatus.FAILED:
            self._repair(node)

    def _record_agent_failure(
        self, parent: Node, kind: NodeKind, message: str, agent_s: float, usage: Usage
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
            usage=usage,
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
        stage = self.task.stage_for(self.progress())
        if failure is None:
            execution, score, failure = self.evaluator.evaluate(
                new_id, src_dir, timing, stage=stage, top_nodes=self.tree.top_ids(ENSEMBLE_TOP_K)
            )

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
