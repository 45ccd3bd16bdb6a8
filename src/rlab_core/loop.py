"""The research loop: the decision cycle (docs/user-guide.md, "Budgets and stop rules").

Each decision takes the core's own step if one is due (:mod:`rlab_core.core_steps`:
a screen's yardstick, a promotion, tuning a stalled best), else asks the strategy for the
next step on the tree it may see and dispatches it (the agent's proposal, the child's
evaluation and its repairs) as a job; then it checks the stop reasons (no evaluated seed, a
failing agent, a budget, the strategy's own, nothing left to expand). Every stop is
journaled. The other rooms: :mod:`rlab_core.scheduling`, :mod:`rlab_core.agent_calls`,
:mod:`rlab_core.node_builder`, :mod:`rlab_core.recorder`, :mod:`rlab_core.stopping`,
:mod:`rlab_core.acceptance`, :mod:`rlab_core.replicates` and :mod:`rlab_core.finalists`.
The journal, the tree and node ids are shared state behind one lock; candidates, the
heavy part, run outside it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlab_core.agent_calls import AgentCalls
from rlab_core.agent_context import AgentContext, BudgetProgress
from rlab_core.budget import budget_stop_reason, progress_of
from rlab_core.core_steps import CoreStep, CoreSteps
from rlab_core.events import RunStopped
from rlab_core.finalists import FinalistRound, reserve_s
from rlab_core.interfaces import Agent, PreparedTask, Sandbox, Step, Strategy, StrategyState
from rlab_core.journal import RunState
from rlab_core.loop_settings import LoopSettings, seed_proposal, seed_sources
from rlab_core.node_builder import NodeBuilder
from rlab_core.recorder import EventSink, Recorder
from rlab_core.records import Node, NodeKind, NodeStatus, Proposal
from rlab_core.replicates import Replicator, measure_seed_noise
from rlab_core.scheduling import Job, Scheduler, strategy_state
from rlab_core.stopping import (
    NOTHING_LEFT,
    log_unjournaled_stop,
    stop_reason_of_error,
    tree_stop_reason,
)
from rlab_core.tree import Tree

if TYPE_CHECKING:
    from rlab_core.evaluation import CandidateEvaluator
    from rlab_core.run_folder import RunFolder

__all__ = ["EventSink", "ResearchLoop", "stop_reason_of_error"]


class ResearchLoop:
    """Runs one search to its stop reason, recording every event."""

    def __init__(
        self,
        *,
        settings: LoopSettings,
        run: RunFolder,
        task: PreparedTask,
        agent: Agent[Any],
        strategy: Strategy[Any],
        sandbox: Sandbox[Any],
        evaluator: CandidateEvaluator,
        recorder: Recorder,
        state: RunState,
    ) -> None:
        self.settings = settings
        self.run = run
        self.task = task
        self.strategy = strategy
        self.sandbox = sandbox
        self.evaluator = evaluator
        self.recorder = recorder
        self.state = state
        self.tree = state.tree
        self.tree.higher_is_better = task.higher_is_better
        self.session_start = time.time()
        # shared state (journal, tree, ids, jobs) is touched under this lock only
        self._lock = recorder.lock
        self.scheduler = Scheduler(
            workers=settings.workers, order=settings.parallel_order, lock=self._lock
        )
        self.nodes = NodeBuilder(
            run=run, task=task, tree=self.tree, state=state, evaluator=evaluator, recorder=recorder
        )
        self.agent_calls = AgentCalls(
            agent=agent,
            task=task,
            tree=self.tree,
            state=state,
            nodes=self.nodes,
            recorder=recorder,
            progress=self.progress,
            settings=settings,
        )
        self.core_steps = CoreSteps(
            self.agent_calls, evaluator.judge, settings.rules, run.nodes_dir
        )
        self.replicator = Replicator(
            run=run, state=state, evaluator=evaluator, recorder=recorder, time_left=self.time_left
        )

    def elapsed_s(self) -> float:
        return self.state.elapsed_s + (time.time() - self.session_start)

    def time_left(self) -> float | None:
        """Seconds left of the time budget (``None``: no time budget)."""
        budget = self.settings.budgets.time_budget_s
        return None if budget is None else budget - self.elapsed_s()

    def progress(self) -> BudgetProgress:
        """Budget use so far; a running job holds one iteration until its first node is in."""
        with self._lock:
            progress = progress_of(self.tree, self.settings.budgets, self.elapsed_s())
            progress.iterations_used += self.scheduler.held_iterations()
            return progress

    # ------------------------------------------------------------------ the cycle

    def run_search(self) -> str:
        """Search until a stop reason; return it (it is also in the journal).

        A search ended by an exception (Ctrl-C, refused credentials, a bug) stops its
        running candidates, journals why it stopped, and re-raises.
        """
        self.scheduler.start()
        try:
            reason = self._search()
            self.scheduler.wait_for_open_jobs()
            # the best few nodes run with other seeds; the best mean is chosen (if asked)
            FinalistRound(
                settings=self.settings.finalists, tree=self.tree, replicator=self.replicator
            ).choose()
        except BaseException as exc:
            self._abort()
            try:
                self._record_stop(stop_reason_of_error(exc))
            except Exception as journal_error:
                # the exception on its way out stays the one reported (a full disk, say)
                log_unjournaled_stop(journal_error)
            raise
        finally:
            self.scheduler.shutdown()
        self._record_stop(reason)
        return reason

    def _record_stop(self, reason: str) -> None:
        best = self.tree.selected()
        self.recorder.record(RunStopped(reason=reason, best=best.id if best else None))

    def _abort(self) -> None:
        """Stop running candidates (Ctrl-C, a fatal error): their nodes stay unfinished."""
        if self.scheduler.open_jobs():
            self.sandbox.cancel()
        self.scheduler.shutdown(cancel=True)

    def _search(self) -> str:
        self._evaluate_seeds()
        settings = self.settings  # the best seed's spread over seeds joins every verdict
        measure_seed_noise(
            self.replicator,
            self.tree,
            self.evaluator.judge,
            base_seed=settings.seed,
            count=settings.noise_seeds,
            workers=settings.workers,
        )
        scheduler = self.scheduler
        while True:
            scheduler.raise_worker_errors()
            if scheduler.is_full():
                scheduler.wait_for_open_jobs(first=True)
                continue
            view, pending = scheduler.decision_view(self.tree)
            reason = self._stop_reason(view)
            if reason is not None:
                return reason
            stage = self.task.stage_for(self.progress())
            core = self.core_steps.next_step(view, pending, stage)
            if core is not None:  # a promotion, or tuning a stalled best: no agent call
                self._dispatch_core(core)
                continue
            steps = self.strategy.next_steps(self._strategy_state(view, pending), capacity=1)
            if not steps:
                # the agent has nothing left here: tuning, if untried, is the next kind of move
                core = self.core_steps.tuning(view, pending, stage, stalled=False)
                if core is not None:
                    self._dispatch_core(core)
                elif scheduler.has_hidden_jobs():
                    scheduler.reveal_one()  # an older job's result may open a new parent
                else:
                    return NOTHING_LEFT
                continue
            self._dispatch(steps[0], view, pending)

    def _strategy_state(self, view: Tree, pending: list[Job]) -> StrategyState:
        with self._lock:
            exhausted = frozenset(self.state.exhausted)
        return strategy_state(view, pending, self.progress(), self.settings, exhausted)

    def _stop_reason(self, view: Tree) -> str | None:
        tree_reason = tree_stop_reason(view)
        if tree_reason is not None:
            return tree_reason
        # the finalists' seed replicates are kept back from a time budget
        reserve = reserve_s(self.tree, self.settings.finalists, self.state.replicates)
        if (budget := budget_stop_reason(self.progress(), reserve)) is not None:
            return budget
        own = self.strategy.stop_reason(self._strategy_state(view, []))
        if self.core_steps.defers(own, view):
            return None  # converged, but the agent has untried changes for the best
        return own or self.core_steps.stop_reason(view)

    # ------------------------------------------------------------------ dispatching a step

    def _dispatch(self, step: Step, view: Tree, pending: list[Job]) -> None:
        parent = self.tree.get(step.parent_id)
        kind = NodeKind.DRAFT if step.kind == "draft" else NodeKind.IMPROVE
        stage = self.task.stage_for(self.progress())
        if stage == "mini" and (reference := self.core_steps.reference(parent, view, pending)):
            self._dispatch_core(reference)  # the screens' yardstick first; then the step
            return
        job = Job(self.scheduler.next_number(), kind, parent.id, step=step, stage=stage)
        context = self.agent_calls.context(parent, step.kind, view, pending, stage=stage)
        if self.agent_calls.concurrent:
            self.scheduler.submit(job, lambda: self._propose_and_build(job, parent, context, kind))
            return
        # one proposal at a time, on this thread: the next decision sees this one's move
        started = time.perf_counter()
        proposal = self.agent_calls.propose(job, parent, context, kind, started)
        if proposal is None:
            if not job.node_ids:
                return  # parent exhausted: no job
            job.holds_budget = False
            self.scheduler.add_finished(job)  # an agent failure is a finished job with one node
            return
        job.proposal = proposal
        agent_s = time.perf_counter() - started
        self.scheduler.submit(
            job, lambda: self._build_and_repair(job, parent, proposal, kind, agent_s)
        )

    def _dispatch_core(self, core: CoreStep) -> None:
        """A node the core proposes itself (:mod:`rlab_core.core_steps`)."""
        number, kind = self.scheduler.next_number(), NodeKind.IMPROVE
        job = Job(number, kind, core.parent.id, proposal=core.proposal, stage=core.stage)
        self._submit(job, core.parent)

    def _submit(self, job: Job, parent: Node | None, seed_path: Path | None = None) -> None:
        """Run a job whose proposal is known (a seed, a core step) on a worker."""
        proposal, kind = job.proposal, job.kind
        assert proposal is not None  # set by the caller

        def work() -> None:
            self._build_and_repair(job, parent, proposal, kind, 0.0, seed_path=seed_path)

        self.scheduler.submit(job, work)

    def _propose_and_build(
        self, job: Job, parent: Node, context: AgentContext, kind: NodeKind
    ) -> None:
        started = time.perf_counter()
        proposal = self.agent_calls.propose(job, parent, context, kind, started)
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
        node = self.nodes.build(
            job=job,
            parent=parent,
            proposal=proposal,
            kind=kind,
            agent_s=agent_s,
            seed_path=seed_path,
        )
        if node.status == NodeStatus.FAILED:
            self.agent_calls.repair(job, node)

    # ------------------------------------------------------------------ seeds

    def _evaluate_seeds(self) -> None:
        done = {n.move_id for n in self.tree.seeds()}
        for name, path, description in seed_sources(self.settings, self.task):
            if name not in done:  # seeds are the baselines: always full fidelity
                proposal = seed_proposal(name, description)
                job = Job(
                    number=self.scheduler.next_number(), kind=NodeKind.SEED, proposal=proposal
                )
                self._submit(job, None, path)
        self.scheduler.wait_for_open_jobs()
        self.scheduler.reveal_all()
