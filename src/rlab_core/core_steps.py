"""Steps the core takes itself, without asking the agent.

- **Screening yardstick.** A child that runs at ``mini`` fidelity (the task's
  ``stage_for`` says so, early in the budget) is a screen: its score is compared with the
  parent's score at the same fidelity, so the parent is re-run once at ``mini``
  (``screen-reference``) before its first screen.
- **Promotion.** A screen that beat its yardstick (or could not be measured against one)
  is re-run unchanged at full fidelity (``promote``); only full scores compete for best
  and only full nodes are parents of new moves. A screen that did worse stops there: the
  cheap run saved the full one.
- **Tuning a stalled best.** When the search has stalled (the convergence rule would stop
  it) but the best node declares tunable parameters its study has not tried enough, the
  core proposes TPE trials on it (:func:`rlab_core.tuning.study.tuning_proposal`), whatever
  the agent: tuning is a kind of move every candidate that declares parameters gets before
  the run may converge.

Each step is an ordinary node (its hypothesis says what it is); each is decided from the
tree alone, so a resumed run takes the same steps.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NamedTuple

from rlab_core.acceptance import NoiseJudge, screen_yardstick
from rlab_core.builtin.convergence import convergence_reason, stall_reason, untried_tuning
from rlab_core.errors import NothingToPropose
from rlab_core.interfaces import StopRules
from rlab_core.records import PROMOTE, SCREEN_REFERENCE, Node, Proposal
from rlab_core.tree import Tree

if TYPE_CHECKING:
    from pathlib import Path

    from rlab_core.agent_calls import AgentCalls
    from rlab_core.scheduling import Job

log = logging.getLogger(__name__)


class CoreStep(NamedTuple):
    """A node the core makes: its parent, its proposal and the stage it runs in."""

    parent: Node
    proposal: Proposal
    stage: str


class CoreSteps:
    """Decides the core's own steps for one run."""

    def __init__(
        self,
        agent_calls: AgentCalls,
        judge: NoiseJudge | None,
        rules: StopRules,
        nodes_dir: Path,
    ) -> None:
        self.agent_calls = agent_calls
        self.judge = judge
        self.rules = rules
        self.nodes_dir = nodes_dir
        #: Bases whose tuning space had nothing left (kept for this session only).
        self.exhausted_studies: set[str] = set()
        #: Bests the agent said it has no untried change for (this session only).
        self.agent_done: set[str] = set()

    def next_step(self, view: Tree, pending: list[Job], stage: str) -> CoreStep | None:
        """A promotion first (it finishes work begun), then tuning a stalled best."""
        return self.promotion(view, pending) or self.tuning(view, pending, stage)

    # ------------------------------------------------------------------ screening

    def reference(self, parent: Node, view: Tree, pending: list[Job]) -> CoreStep | None:
        """The parent's ``mini`` re-run, when a screen of it is next and it has none yet."""
        if parent.fidelity == "mini":
            return None
        made = [c.move_id for c in view.children(parent.id)]
        made += [_move(job) for job in pending if job.parent_id == parent.id]
        if SCREEN_REFERENCE in made:
            return None  # measured, failed or running: never twice
        proposal = Proposal(
            hypothesis=f"Re-run {parent.id} unchanged at mini fidelity: the yardstick its "
            "screens are measured against",
            move_id=SCREEN_REFERENCE,
        )
        return CoreStep(parent, proposal, "mini")

    def promotion(self, view: Tree, pending: list[Job]) -> CoreStep | None:
        """The oldest promising screen not promoted yet, re-run at full fidelity."""
        promoted = {c.parent_id for c in view if c.move_id == PROMOTE}
        promoted |= {job.parent_id for job in pending if _move(job) == PROMOTE}
        for node in view.evaluated():
            if node.fidelity != "mini" or node.move_id == SCREEN_REFERENCE:
                continue
            if node.id in promoted:
                continue
            why = self._promising(view, node)
            if why is None:
                continue
            proposal = Proposal(
                hypothesis=f"Promote {node.id} to a full-fidelity run: {why}",
                move_id=PROMOTE,
                tuning=node.tuning,
            )
            return CoreStep(node, proposal, "full")
        return None

    def _promising(self, view: Tree, node: Node) -> str | None:
        """Why ``node`` deserves a full run, or ``None`` when its screen did not beat its
        yardstick."""
        yardstick = screen_yardstick(view, node)
        if yardstick is None:
            return "no yardstick at mini fidelity measured it, so the full run decides"
        gain = node.gain
        if (gain is None or gain.against != yardstick.id) and self.judge is not None:
            gain = self.judge.compare(node, yardstick, self.nodes_dir)  # yardstick came later
        if gain is None or gain.delta <= 0:
            return None
        score, other = node.score, yardstick.score
        assert score is not None and other is not None  # both evaluated
        return (
            f"screened at mini fidelity it scored {score.primary:.6g} against "
            f"{other.primary:.6g} for {yardstick.id}"
        )

    # ------------------------------------------------------------------ tuning

    def defers(self, reason: str | None, view: Tree) -> bool:
        """True when ``reason`` is the convergence rule's and the agent still has untried
        changes of the code for the best node: budget remains, so they are tried first."""
        best = view.best()
        if reason is None or best is None or reason != convergence_reason(view, self.rules):
            return False
        if best.id in self.agent_done:
            return False
        if self.agent_calls.has_untried_moves(best, view):
            return True
        self.agent_done.add(best.id)  # asked once per best: its answer only shrinks
        return False

    def stop_reason(self, view: Tree) -> str | None:
        """The stall's reason once the best's tuning space is exhausted (nothing untried)."""
        best = untried_tuning(view, self.rules)
        if (
            best is None
            or (best.tuning.base if best.tuning else best.id) not in self.exhausted_studies
        ):
            return None
        return stall_reason(view, self.rules)

    def tuning(
        self, view: Tree, pending: list[Job], stage: str, *, stalled: bool = True
    ) -> CoreStep | None:
        """A TPE trial on the best, when tuning it is untried and the search has stalled
        (``stalled=False``: the agent has nothing left to propose, stalled or not)."""
        if stalled and stall_reason(view, self.rules) is None:
            return None
        running = [job.proposal.tuning.base for job in pending if _tuning(job)]  # type: ignore[union-attr]
        best = untried_tuning(view, self.rules, running)
        if best is None or (best.tuning.base if best.tuning else best.id) in self.exhausted_studies:
            return None
        if stage == "mini" and (reference := self.reference(best, view, pending)):
            return reference  # a trial screened at mini is measured against its yardstick
        from rlab_core.tuning.study import study_base, tuning_proposal

        context = self.agent_calls.context(best, "improve", view, pending, stage=stage)
        try:
            proposal = tuning_proposal(context)
        except NothingToPropose as exc:
            self.exhausted_studies.add(study_base(context))
            log.info("no tuning trial for %s: %s", best.id, exc)
            return None
        return CoreStep(best, proposal, stage)


def _move(job: Job) -> str | None:
    return job.proposal.move_id if job.proposal is not None else None


def _tuning(job: Job) -> bool:
    return job.proposal is not None and job.proposal.tuning is not None
