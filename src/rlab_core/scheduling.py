"""Running several candidates at once: jobs, the worker pool and the decision view.

A *job* is one unit of work the loop hands to a worker thread: a seed, or one step of
the strategy (the agent's proposal, the child's evaluation and its repairs). Jobs are
numbered in dispatch order and may finish in any order; every node is journaled the moment
it finishes, so a kill loses only the nodes that were running.

What the strategy and the agent see when the loop makes its next decision is the
*decision view*. In ``reproducible`` order (the default), decision ``k`` sees the results
of exactly the jobs numbered ``k - workers`` and below, in job order, and sees the other
dispatched jobs as ``running`` — whichever of them happen to have finished already. The
set of candidates a run evaluates is then a function of the seed, the budget and the
number of workers, never of timing; with one worker it is the sequential search. In
``as-completed`` order every finished node is visible at once: no worker ever waits for an
older job, at the price of timing-dependent choices.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from rlab_core.agent_context import BudgetProgress, NodeSummary
from rlab_core.interfaces import Step, StrategyState
from rlab_core.loop_settings import LoopSettings, ParallelOrder
from rlab_core.records import NodeKind, Proposal
from rlab_core.tree import Tree


@dataclass
class Job:
    """One dispatched unit of work and the nodes it produced so far."""

    number: int
    kind: NodeKind
    parent_id: str | None = None
    step: Step | None = None
    #: Known at dispatch when the agent proposes on the loop's thread.
    proposal: Proposal | None = None
    #: ``RLAB_STAGE`` of its nodes: the task's stage for the budget used when dispatched.
    stage: str = "full"
    node_ids: list[str] = field(default_factory=list)
    future: Future[None] | None = None
    #: True until the job's first node is journaled: it holds one iteration of the budget.
    holds_budget: bool = True

    @property
    def done(self) -> bool:
        return self.future is None or self.future.done()

    def running_summary(self) -> NodeSummary:
        """How an agent sees a job whose result is not visible yet."""
        proposal = self.proposal
        return NodeSummary(
            id=self.node_ids[0] if self.node_ids else f"job{self.number}",
            parent_id=self.parent_id,
            kind=self.kind,
            status="running",
            hypothesis=proposal.hypothesis if proposal else "(the agent is still proposing)",
            move_id=proposal.move_id if proposal else None,
            tuning=proposal.tuning if proposal else None,
        )


def strategy_state(
    view: Tree,
    pending: list[Job],
    progress: BudgetProgress,
    settings: LoopSettings,
    exhausted: frozenset[str],
) -> StrategyState:
    """What the strategy is told at one decision: ``view``, the running jobs, the budget.

    Its random generator is seeded by the run's seed and the decision's number, so a rerun
    draws the same.
    """
    running: dict[str, int] = {}
    for job in pending:
        if job.parent_id is not None:
            running[job.parent_id] = running.get(job.parent_id, 0) + 1
    iteration = view.iterations_used() + len(pending)
    return StrategyState(
        tree=view,
        progress=progress,
        rules=settings.rules,
        rng=random.Random(f"{settings.seed}:{iteration}"),
        exhausted=exhausted,
        running=running,
        running_drafts=sum(1 for job in pending if job.kind == NodeKind.DRAFT),
    )


def decision_tree(full: Tree, jobs: list[Job], visible: int) -> Tree:
    """The tree as the next decision sees it: earlier sessions' nodes, then the first
    ``visible`` jobs' nodes in job order (so ε-convergence reads the same history on
    every rerun)."""
    in_jobs = {node_id for job in jobs for node_id in job.node_ids}
    view = Tree(full.higher_is_better)
    for node in full:
        if node.id not in in_jobs:
            view.add(node)
    for job in jobs[:visible]:
        for node_id in job.node_ids:
            if node_id in full.nodes:
                view.add(full.nodes[node_id])
    view.closed_reasons = {k: v for k, v in full.closed_reasons.items() if k in view.nodes}
    return view


class Scheduler:
    """The jobs of one search, the threads that run them, and what decisions may see.

    With one worker a job runs inline, on the loop's thread: exactly the sequential search.
    ``lock`` is the loop's lock over its shared state (jobs included).
    """

    def __init__(self, *, workers: int, order: ParallelOrder, lock: threading.RLock) -> None:
        self.workers = workers
        self.order = order
        self.lock = lock
        self.jobs: list[Job] = []
        #: Decisions see the results of ``jobs[:visible]``.
        self.visible = 0
        self._pool: ThreadPoolExecutor | None = None

    def start(self) -> None:
        if self.workers > 1:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="rlab-worker")

    def shutdown(self, *, cancel: bool = False) -> None:
        """Wait for the workers; ``cancel`` drops jobs that have not started."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)

    def next_number(self) -> int:
        return len(self.jobs)

    def open_jobs(self) -> list[Job]:
        with self.lock:
            return [job for job in self.jobs if not job.done]

    def is_full(self) -> bool:
        return len(self.open_jobs()) >= self.workers

    def held_iterations(self) -> int:
        """Iterations held by running jobs whose first node is not journaled yet."""
        with self.lock:
            return sum(1 for job in self.jobs if job.holds_budget and not job.done)

    def submit(self, job: Job, work: Callable[[], None]) -> None:
        with self.lock:
            self.jobs.append(job)
        if self._pool is None:
            work()  # one worker: run inline, exactly the sequential search
        else:
            job.future = self._pool.submit(work)

    def add_finished(self, job: Job) -> None:
        """Count a job that ended on the loop's thread (an agent failure: one node)."""
        with self.lock:
            self.jobs.append(job)

    def wait_for(self, jobs: list[Job], *, first: bool = False) -> None:
        futures = [job.future for job in jobs if job.future is not None]
        if futures:
            wait(futures, return_when=FIRST_COMPLETED if first else "ALL_COMPLETED")
        self.raise_worker_errors()

    def wait_for_open_jobs(self, *, first: bool = False) -> None:
        self.wait_for(self.open_jobs(), first=first)

    def raise_worker_errors(self) -> None:
        """Re-raise, on the loop's thread, what a worker could not handle (a bug, a dead sandbox)."""
        for job in self.jobs:
            if job.future is not None and job.future.done():
                error = job.future.exception()
                if error is not None:
                    raise error

    def has_hidden_jobs(self) -> bool:
        return self.visible < len(self.jobs)

    def reveal_one(self) -> None:
        """Wait for the oldest job decisions cannot see yet, then let them see it."""
        job = self.jobs[self.visible]
        self.wait_for([job])
        with self.lock:
            self.visible += 1

    def reveal_all(self) -> None:
        with self.lock:
            self.visible = len(self.jobs)

    def decision_view(self, tree: Tree) -> tuple[Tree, list[Job]]:
        """The tree the next decision sees and the jobs it sees as running."""
        if self.order == "reproducible":
            # decision k sees jobs numbered k - workers and below, whatever else finished
            needed = len(self.jobs) - self.workers + 1
            while self.visible < needed:
                self.reveal_one()
        else:
            with self.lock:
                while self.visible < len(self.jobs) and self.jobs[self.visible].done:
                    self.visible += 1
        with self.lock:
            if self.workers == 1:
                return tree, []  # finishing order is dispatch order: the real tree
            if self.order == "reproducible":
                return decision_tree(tree, self.jobs, self.visible), self.jobs[self.visible :]
            pending = [job for job in self.jobs if not job.done]
            done = [job for job in self.jobs if job.done]
            return decision_tree(tree, [*done, *pending], len(done)), pending
