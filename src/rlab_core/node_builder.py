"""Making the run's nodes: an id, the child's source on disk, its evaluation, its record.

Every node that starts is finished with a record — evaluated, or failed with its cause —
and journaled the moment it finishes, so the journal always holds every completed node.
The one exception is the run's own storage failing (a full disk): the run stops and the
node stays unfinished, so ``rlab resume`` drops it and the move is made again.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rlab_core.blobs import RunStorage
from rlab_core.child import build_child
from rlab_core.edits import SourceFiles, copy_source, read_source, share_source, write_source
from rlab_core.events import NodeStarted
from rlab_core.interfaces import PreparedTask
from rlab_core.journal import RunState, node_id
from rlab_core.node_context import context_record, write_context
from rlab_core.recorder import Recorder
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
    fidelity_of,
)
from rlab_core.scheduling import Job
from rlab_core.tree import Tree
from rlab_core.tuning.space import TunableSpecError, declared_params

if TYPE_CHECKING:
    from rlab_core.agent_context import AgentContext
    from rlab_core.evaluation import CandidateEvaluator
    from rlab_core.run_folder import RunFolder

#: How many of the best nodes an ``ensemble``-stage candidate is told to combine.
ENSEMBLE_TOP_K = 5
#: Node sources kept in memory for contexts and children (the oldest read is dropped first).
SOURCE_CACHE_SIZE = 64
AGENT_FAILURE_HYPOTHESIS = "(the agent produced no usable proposal)"


class _Started(NamedTuple):
    """A node journaled as started: its id, iteration and start time."""

    id: str
    iteration: int
    created_at: float


class RunInterrupted(Exception):
    """A worker's candidate was cancelled because the run is stopping (Ctrl-C, a fatal error)."""


class NodeBuilder:
    """Turns proposals into finished, journaled nodes."""

    def __init__(
        self,
        *,
        run: RunFolder,
        task: PreparedTask,
        tree: Tree,
        state: RunState,
        evaluator: CandidateEvaluator,
        recorder: Recorder,
    ) -> None:
        self.run = run
        self.task = task
        self.tree = tree
        self.state = state
        self.evaluator = evaluator
        self.recorder = recorder
        self._lock: threading.RLock = recorder.lock
        self._sources: dict[str, SourceFiles] = {}
        self._iteration = tree.iterations_used()
        self.storage = RunStorage(run)
        #: The kept context (:func:`context_record`) of each job's next node, by job number.
        self._contexts: dict[int, dict[str, Any]] = {}

    def remember_context(self, job: Job, context: AgentContext) -> None:
        """Keep ``context`` for the job's next node (written beside it as it finishes)."""
        record = context_record(context)
        with self._lock:
            self._contexts[job.number] = record

    def _new_id(self) -> str:
        with self._lock:
            self.state.max_node_number += 1
            return node_id(self.state.max_node_number)

    def _next_iteration(self) -> int:
        with self._lock:
            self._iteration += 1
            return self._iteration

    def source_of(self, node_id_: str) -> SourceFiles:
        """A node's source files (read once, then kept for the next few uses)."""
        with self._lock:
            if node_id_ not in self._sources:
                if len(self._sources) > SOURCE_CACHE_SIZE:
                    self._sources.pop(next(iter(self._sources)))
                self._sources[node_id_] = read_source(self.run.node_src(node_id_))
            return self._sources[node_id_]

    def _start(self, job: Job, parent_id: str | None, kind: NodeKind, hypothesis: str) -> _Started:
        """A new node's id and iteration, journaled as started."""
        new_id = self._new_id()
        job.node_ids.append(new_id)
        iteration = 0 if kind == NodeKind.SEED else self._next_iteration()
        self.recorder.record(
            NodeStarted(
                id=new_id,
                parent_id=parent_id,
                kind=kind,
                iteration=iteration,
                hypothesis=hypothesis,
            )
        )
        return _Started(new_id, iteration, time.time())

    def build(
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
        """Build, run and score one node from ``parent`` (or the seed program at ``seed_path``)."""
        parent_id = parent.id if parent else None
        # a trial measures a setting of its study's program, never a blend with other nodes
        stage = "full" if proposal.tuning is not None and job.stage == "ensemble" else job.stage
        started = self._start(job, parent_id, kind, proposal.hypothesis)
        timing = Timing(agent_s=round(agent_s, 4))
        src_dir = self.run.node_src(started.id)
        edit_start = time.perf_counter()
        # the harness's own writes: a full disk here stops the run, it fails no candidate
        with self.run.storage_guard(src_dir.parent):
            # the core's own jobs (no strategy step) may re-run a source unchanged
            rerun = job.step is None and job.kind != NodeKind.SEED
            diff, changed, failure = self._write_child(src_dir, parent, proposal, seed_path, rerun)
        timing.edit_s = round(time.perf_counter() - edit_start, 4)

        execution: Execution | None = None
        score: Score | None = None
        top: list[str] = []
        if failure is None:
            with self._lock:
                top = self.tree.top_ids(ENSEMBLE_TOP_K) if stage == "ensemble" else []
            # a trial sets declared values, a re-run changes nothing: the code already ran
            smoke = proposal.tuning is None and not rerun
            execution, score, failure = self.evaluator.evaluate(
                started.id, src_dir, timing, stage=stage, top_nodes=top, smoke=smoke
            )
            if execution is not None and execution.killed_by == "cancelled":
                # the run is being interrupted: the node stays unfinished, like a killed run's
                raise RunInterrupted(f"{started.id} was stopped by the interrupt")
            if score is not None:
                score.fidelity = fidelity_of(stage)

        with self.run.storage_guard(src_dir.parent):
            self.storage.keep_node(started.id)

        node = Node(
            id=started.id,
            parent_id=parent_id,
            iteration=started.iteration,
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
            tuning=proposal.tuning,
            tunables=self.tunables_of(started.id),
            stage=stage,
            top_nodes=top,
            usage=proposal.usage,
            timing=timing,
            created_at=started.created_at,
        )
        return self._finish(node, job)

    def tunables_of(self, node_id_: str) -> list[str]:
        """Names of the tunable parameters a node's source declares (none when unreadable)."""
        try:
            return [p.name for p in declared_params(self.source_of(node_id_))]
        except (TunableSpecError, OSError):
            return []  # a broken declaration is the tuning proposal's sentence, not a failure

    def _write_child(
        self,
        src_dir: Path,
        parent: Node | None,
        proposal: Proposal,
        seed_path: Path | None,
        rerun: bool = False,
    ) -> tuple[str, list[str], Failure | None]:
        """The child's source and ``diff.patch`` on disk: (diff, changed files, edit failure)."""
        src_dir.parent.mkdir(parents=True, exist_ok=True)
        if parent is None:
            if seed_path is None:
                raise ValueError("a seed node needs the folder of its program")
            copy_source(seed_path, src_dir)
            diff, changed, failure = "", [], None
        else:
            parent_files = self.source_of(parent.id)
            share_source(self.run.node_src(parent.id), src_dir)
            child = build_child(
                parent_files,
                proposal,
                self.task.editable_files,
                self.task.forbidden_tokens,
                rerun=rerun,
            )
            diff, changed, failure = child.diff, child.changed, child.failure
            # a refused node keeps its parent's source, so a later repair of it cannot
            # inherit the refused tokens as "the parent had them"
            if child.ok:
                write_source(src_dir, child.files, changed)
        (src_dir.parent / "diff.patch").write_text(diff)
        return diff, changed, failure

    def record_agent_failure(
        self, job: Job, parent: Node, kind: NodeKind, message: str, agent_s: float, usage: Usage
    ) -> Node:
        """A failed node for an agent call that gave no usable proposal (its cost still counts)."""
        started = self._start(job, parent.id, kind, AGENT_FAILURE_HYPOTHESIS)
        node = Node(
            id=started.id,
            parent_id=parent.id,
            iteration=started.iteration,
            kind=kind,
            status=NodeStatus.FAILED,
            hypothesis=AGENT_FAILURE_HYPOTHESIS,
            failure=Failure(stage=FailureStage.AGENT, message=message),
            usage=usage,
            timing=Timing(agent_s=agent_s),
            created_at=started.created_at,
        )
        return self._finish(node, job)

    def _finish(self, node: Node, job: Job) -> Node:
        book_start = time.perf_counter()
        node.finished_at = time.time()
        with self._lock:
            context = self._contexts.pop(job.number, None)
        with self.run.storage_guard(self.run.node_dir(node.id)):
            self.run.node_dir(node.id).mkdir(parents=True, exist_ok=True)
            if context is not None:
                write_context(self.run.node_dir(node.id), context)
        with self._lock:
            judge = self.evaluator.judge
            if judge is not None:
                # against the best of this moment: the journal's order is the judging order
                judge.judge(node, self.tree, self.run.nodes_dir)
            # journaled first: a node the journal could not take (a full disk) is no result
            self.recorder.node_finished(node, bookkeeping_since=book_start)
            self.tree.add(node)
            job.holds_budget = False
        return node
