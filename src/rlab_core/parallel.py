"""Bookkeeping for running several candidates at once: jobs and the decision view.

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

from concurrent.futures import Future
from dataclasses import dataclass, field

from rlab_core.agent_context import NodeSummary
from rlab_core.interfaces import Step
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
