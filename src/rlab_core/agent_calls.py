"""Asking the agent: what each call sees, its proposals, and the repairs of failed nodes.

A failed node gets ``debug_tries`` repairs; a branch whose repairs fail too is closed as
``recovered_failure`` and never becomes a parent. An agent that is not ``concurrent_calls``
is asked one call at a time, whichever thread asks. Each context carries the knowledge of
earlier runs (when the run has it on) and is kept beside the node it produced.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from rlab_core.agent_context import AgentContext, BudgetProgress, NodeSummary, RepairContext
from rlab_core.budget import budget_stop_reason
from rlab_core.errors import AgentError, NothingToPropose
from rlab_core.events import BranchClosed, ParentExhausted
from rlab_core.interfaces import Agent, PreparedTask
from rlab_core.journal import RunState
from rlab_core.loop_settings import LoopSettings
from rlab_core.node_builder import NodeBuilder
from rlab_core.recorder import Recorder
from rlab_core.records import FailureStage, Node, NodeKind, NodeStatus, Proposal, Usage
from rlab_core.scheduling import Job
from rlab_core.tree import Tree

StepKind = Literal["draft", "improve"]


class AgentCalls:
    """The agent's side of the loop: contexts, proposals and repairs."""

    def __init__(
        self,
        *,
        agent: Agent[Any],
        task: PreparedTask,
        tree: Tree,
        state: RunState,
        nodes: NodeBuilder,
        recorder: Recorder,
        progress: Callable[[], BudgetProgress],
        settings: LoopSettings,
    ) -> None:
        self.agent = agent
        self.task = task
        self.tree = tree
        self.state = state
        self.nodes = nodes
        self.recorder = recorder
        self.progress = progress
        self.seed = settings.seed
        self.debug_tries = settings.debug_tries
        self.knowledge = settings.knowledge
        self._lock = recorder.lock
        self._problem = task.context()
        self._playbook = task.playbook()
        self._agent_lock: contextlib.AbstractContextManager[Any] = (
            contextlib.nullcontext() if agent.concurrent_calls else threading.Lock()
        )

    @property
    def concurrent(self) -> bool:
        """True when the agent may be asked from several threads at once."""
        return self.agent.concurrent_calls

    def context(
        self,
        parent: Node,
        step: StepKind,
        view: Tree | None = None,
        pending: list[Job] | None = None,
        *,
        stage: str,
    ) -> AgentContext:
        """What the agent sees: ``view`` (default: the whole tree) and the ``pending`` jobs."""
        progress = self.progress()
        with self._lock:
            tree = view if view is not None else self.tree
            summaries: list[NodeSummary] = tree.summaries()
            summaries += [job.running_summary() for job in pending or []]
            parent_summary = self.tree.summary(parent)
        knowledge = self.knowledge.digest(parent.hypothesis) if self.knowledge else None
        return AgentContext(
            task=self.task.name,
            problem=self._problem,
            primary_metric=self.task.primary_metric,
            higher_is_better=self.task.higher_is_better,
            parent=parent_summary,
            parent_source=self.nodes.source_of(parent.id),
            tree=summaries,
            progress=progress,
            editable_files=list(self.task.editable_files),
            playbook=self._playbook,
            seed=self.seed,
            step=step,
            stage=stage,
            knowledge=knowledge,
        )

    def has_untried_moves(self, parent: Node, view: Tree) -> bool:
        """Whether the agent says changes it has not tried remain for ``parent``."""
        context = self.context(parent, "improve", view, stage="full")
        with self._agent_lock:
            return bool(self.agent.has_untried_moves(context))

    def propose(
        self, job: Job, parent: Node, context: AgentContext, kind: NodeKind, started: float
    ) -> Proposal | None:
        """The agent's proposal, or ``None`` after recording why there is none."""
        self.nodes.remember_context(job, context)
        try:
            with self._agent_lock:
                return self.agent.propose(context)
        except NothingToPropose as exc:
            with self._lock:
                self.state.exhausted.add(parent.id)
            self.recorder.record(ParentExhausted(node_id=parent.id, reason=str(exc)))
        except AgentError as exc:
            usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
            self.nodes.record_agent_failure(
                job, parent, kind, str(exc), time.perf_counter() - started, usage
            )
        return None

    def repair(self, job: Job, failed: Node) -> None:
        """Give a failed node up to ``debug_tries`` repairs; close the branch if they fail."""
        if (
            self.debug_tries <= 0
            or failed.failure is None
            or failed.failure.stage == FailureStage.AGENT
        ):
            return
        attempts = [failed.id]
        current = failed
        for attempt in range(1, self.debug_tries + 1):
            if budget_stop_reason(self.progress()):
                return  # out of budget: the branch stays failed, not closed
            context = RepairContext(
                **self.context(current, "improve", stage=job.stage).model_dump(),
                original_hypothesis=failed.hypothesis,
                error=current.failure.message if current.failure else "",
                log_tail=current.failure.log_tail if current.failure else "",
                attempt=attempt,
            )
            started = time.perf_counter()
            self.nodes.remember_context(job, context)
            try:
                with self._agent_lock:
                    proposal = self.agent.repair(context)
            except AgentError as exc:
                self._close_branch(attempts, f"repair failed: {exc}")
                return
            if proposal is None:
                self._close_branch(attempts, "the agent cannot repair this failure")
                return
            node = self.nodes.build(
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
        self._close_branch(attempts, f"repair failed after {self.debug_tries} attempt(s)")

    def _close_branch(self, node_ids: list[str], reason: str) -> None:
        with self._lock:
            self.recorder.record(BranchClosed(node_ids=node_ids, reason=reason))
            self.tree.close_branch(node_ids, reason)
