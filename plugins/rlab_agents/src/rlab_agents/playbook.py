"""The offline ``playbook`` agent: real prepared moves, never an invented change."""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field

from rlab_core.api import (
    Agent,
    AgentContext,
    EditError,
    NodeSummary,
    NothingToPropose,
    PlaybookMove,
    Proposal,
    RepairContext,
    apply_edits,
)

FIX_SUFFIX = ":fix"


class PlaybookConfig(BaseModel):
    """Options of the ``playbook`` agent."""

    model_config = ConfigDict(extra="forbid")

    exploration: float = Field(
        default=0.1, ge=0, le=1, description="Chance of trying a lower-ranked applicable move."
    )


def lineage_of(tree: list[NodeSummary], node_id: str) -> list[NodeSummary]:
    """The node and its ancestors, root first."""
    by_id = {n.id: n for n in tree}
    chain: list[NodeSummary] = []
    current: str | None = node_id
    while current is not None and current in by_id:
        chain.append(by_id[current])
        current = by_id[current].parent_id
    return list(reversed(chain))


def _base_move(move_id: str | None) -> str | None:
    return move_id[: -len(FIX_SUFFIX)] if move_id and move_id.endswith(FIX_SUFFIX) else move_id


class PlaybookAgent(Agent):
    """Proposes the best-ranked untried move that applies to the parent."""

    Config = PlaybookConfig

    def __init__(self, config: BaseModel) -> None:
        super().__init__(config)
        self.options: PlaybookConfig = config  # type: ignore[assignment]

    @staticmethod
    def tried_on_lineage(context: AgentContext) -> tuple[set[str], set[str]]:
        """(moves applied in the parent's lineage, moves tried from any node of it)."""
        lineage = lineage_of(context.tree, context.parent.id)
        lineage_ids = {n.id for n in lineage}
        applied = {m for n in lineage if (m := _base_move(n.move_id))}
        tried = set(applied)
        for node in context.tree:
            if node.parent_id in lineage_ids and (move := _base_move(node.move_id)):
                tried.add(move)
        return applied, tried

    def candidates(self, context: AgentContext) -> list[PlaybookMove]:
        """Untried moves whose prerequisites are in the lineage and whose anchors apply."""
        applied, tried = self.tried_on_lineage(context)
        usable = []
        for move in sorted(context.playbook, key=lambda m: (m.rank, m.id)):
            if move.id in tried or not set(move.requires) <= applied:
                continue
            try:
                apply_edits(context.parent_source, move.edits, context.editable_files)
            except EditError:
                continue
            usable.append(move)
        return usable

    def propose(self, context: AgentContext) -> Proposal:
        usable = self.candidates(context)
        if not usable:
            raise NothingToPropose(f"no untried playbook move applies to {context.parent.id}")
        rng = random.Random(f"{context.seed}:{context.parent.id}:{len(context.tree)}")
        move = usable[0]
        if len(usable) > 1 and rng.random() < self.options.exploration:
            move = rng.choice(usable[1:])
        return Proposal(
            hypothesis=move.hypothesis,
            edits=move.edits,
            move_id=move.id,
            rationale=f"playbook move {move.id} (rank {move.rank})",
        )

    def repair(self, context: RepairContext) -> Proposal | None:
        move_id = context.parent.move_id
        if not move_id or move_id.endswith(FIX_SUFFIX):
            return None  # no declared fix, or the fix itself failed
        move = next((m for m in context.playbook if m.id == move_id), None)
        if move is None or not move.fix:
            return None
        try:
            apply_edits(context.parent_source, move.fix, context.editable_files)
        except EditError:
            return None
        return Proposal(
            hypothesis=f"Repair of '{move.id}': apply its declared fix ({context.error[:120]})",
            edits=move.fix,
            move_id=move.id + FIX_SUFFIX,
        )
