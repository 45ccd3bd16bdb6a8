"""The offline ``playbook`` agent: real prepared moves, never an invented change.

Which moves may be proposed for a parent is the playbook's rules
(:func:`rlab_core.api.applicable_moves`: untried along the lineage, prerequisites applied,
anchors present, lowest rank first). This agent orders them by what earlier runs on similar
tasks verified (:func:`rlab_core.api.order_by_knowledge`: moves whose gain held up first,
the static ranks otherwise), takes the first, or with chance ``exploration`` a later one,
and repairs a failed move with its declared fix.

Where the parent declares tunable parameters (``# tune:`` comments), the agent interleaves
tuning trials (Optuna's TPE over those parameters, :mod:`rlab_core.tuning`) with the moves,
as :func:`rlab_core.tuning.policy.next_move_kind` says from the tree: moves first; after
``stall`` moves in a row without a new best, a burst of trials on the best; then moves again
on top of the tuned best. Tuning runs when no move applies, moves when the tuning space is
spent. A failed trial is not repaired: its setting is recorded as failed, and the study's
next sample avoids it.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field

from rlab_core.api import (
    Agent,
    AgentContext,
    NothingToPropose,
    PlaybookMove,
    Proposal,
    RepairContext,
    applicable_moves,
    fix_proposal,
    lineage_of,
    move_proposal,
    next_move_kind,
    order_by_knowledge,
    tuning_proposal,
)

__all__ = ["PlaybookAgent", "PlaybookConfig", "lineage_of"]


class PlaybookConfig(BaseModel):
    """Options of the ``playbook`` agent."""

    model_config = ConfigDict(extra="forbid")

    exploration: float = Field(
        default=0.1, ge=0, le=1, description="Chance of trying a lower-ranked applicable move."
    )
    tuning: bool = Field(
        default=True,
        description="Interleave tuning trials of the parent's declared parameters (`# tune:` "
        "comments; Optuna TPE) with the playbook's moves; false: moves only.",
    )
    tuning_burst: int | None = Field(
        default=None,
        ge=1,
        description="Trials in a tuning burst; default: max(4, number of declared parameters).",
    )
    stall: int = Field(
        default=2,
        ge=1,
        description="Moves in a row without a new best before a tuning burst.",
    )


class PlaybookAgent(Agent[PlaybookConfig]):
    """Proposes the best-ranked untried move that applies to the parent."""

    def candidates(self, context: AgentContext) -> list[PlaybookMove]:
        """Untried moves whose prerequisites are in the lineage and whose anchors apply,
        those that held up on similar tasks before first."""
        return order_by_knowledge(applicable_moves(context), context)

    def propose(self, context: AgentContext) -> Proposal:
        usable = self.candidates(context)
        if self.config.tuning:
            kind = next_move_kind(
                context,
                structural_available=bool(usable),
                burst=self.config.tuning_burst,
                stall=self.config.stall,
            )
            if kind == "tune" or not usable:
                try:
                    return tuning_proposal(context)
                except NothingToPropose:
                    pass  # nothing declared, or every setting tried: a move if one applies
        if not usable:
            spent = " and nothing is left to tune" if self.config.tuning else ""
            raise NothingToPropose(
                f"no untried playbook move applies to {context.parent.id}{spent}"
            )
        rng = random.Random(f"{context.seed}:{context.parent.id}:{len(context.tree)}")
        move = usable[0]
        if len(usable) > 1 and rng.random() < self.config.exploration:
            move = rng.choice(usable[1:])
        return move_proposal(move, _evidence(move, context))

    def has_untried_moves(self, context: AgentContext) -> bool:
        """Whether a playbook move not yet tried on the parent's lineage still applies to it
        (a run does not converge while one does and budget remains)."""
        return bool(self.candidates(context))

    def repair(self, context: RepairContext) -> Proposal | None:
        """A failed move's declared fix; none for a failed tuning trial (the study avoids
        its setting from now on) or a move without a fix."""
        return fix_proposal(context)


def _evidence(move: PlaybookMove, context: AgentContext) -> str:
    """What earlier runs said of ``move``, for its rationale (empty when nothing)."""
    stat = context.knowledge.move_stats.get(move.id) if context.knowledge else None
    if stat is None or not stat.tries:
        return ""
    gain = "n/a" if stat.mean_gain is None else f"{stat.mean_gain:+.4g}"
    return f"held {stat.held}/{stat.tries} tries on similar tasks (mean gain {gain})"
