"""The offline ``playbook`` agent: real prepared moves, never an invented change.

Which moves may be proposed for a parent is the playbook's rules
(:func:`rlab_core.api.applicable_moves`: untried along the lineage, prerequisites applied,
anchors present, lowest rank first). This agent orders them by what earlier runs on similar
tasks verified (:func:`rlab_core.api.order_by_knowledge`: moves whose gain held up first,
the static ranks otherwise), takes the first, or with chance ``exploration`` a later one,
and repairs a failed move with its declared fix.
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
    order_by_knowledge,
)

__all__ = ["PlaybookAgent", "PlaybookConfig", "lineage_of"]


class PlaybookConfig(BaseModel):
    """Options of the ``playbook`` agent."""

    model_config = ConfigDict(extra="forbid")

    exploration: float = Field(
        default=0.1, ge=0, le=1, description="Chance of trying a lower-ranked applicable move."
    )


class PlaybookAgent(Agent[PlaybookConfig]):
    """Proposes the best-ranked untried move that applies to the parent."""

    def candidates(self, context: AgentContext) -> list[PlaybookMove]:
        """Untried moves whose prerequisites are in the lineage and whose anchors apply,
        those that held up on similar tasks before first."""
        return order_by_knowledge(applicable_moves(context), context)

    def propose(self, context: AgentContext) -> Proposal:
        usable = self.candidates(context)
        if not usable:
            raise NothingToPropose(f"no untried playbook move applies to {context.parent.id}")
        rng = random.Random(f"{context.seed}:{context.parent.id}:{len(context.tree)}")
        move = usable[0]
        if len(usable) > 1 and rng.random() < self.config.exploration:
            move = rng.choice(usable[1:])
        return move_proposal(move, _evidence(move, context))

    def repair(self, context: RepairContext) -> Proposal | None:
        return fix_proposal(context)


def _evidence(move: PlaybookMove, context: AgentContext) -> str:
    """What earlier runs said of ``move``, for its rationale (empty when nothing)."""
    stat = context.knowledge.move_stats.get(move.id) if context.knowledge else None
    if stat is None or not stat.tries:
        return ""
    gain = "n/a" if stat.mean_gain is None else f"{stat.mean_gain:+.4g}"
    return f"held {stat.held}/{stat.tries} tries on similar tasks (mean gain {gain})"
