"""The rules of a task's playbook, for the agents that play its moves.

A :class:`~rlab_core.task_records.PlaybookMove` is tried lowest ``rank`` first, at most
once along a lineage (a move tried from any node of the parent's lineage is not offered
again below it), only once every move it ``requires`` is applied in the lineage, and only
where all its anchors occur in the parent's source (a move for another seed is skipped).
A failed move is repaired with the ``fix`` it declares, once: the repair's ``move_id`` is
the move's id with :data:`FIX_SUFFIX`. The testing kit's ``ranked-playbook`` agent is these
rules alone (static ranks, for reproducible benchmark tests); rlab-agents' ``playbook`` agent
orders the applicable moves by what earlier runs on similar tasks verified
(:func:`order_by_knowledge`) and adds exploration on top.
"""

from __future__ import annotations

from rlab_core.agent_context import AgentContext, NodeSummary, RepairContext
from rlab_core.edits import apply_edits
from rlab_core.errors import EditError
from rlab_core.records import Proposal
from rlab_core.task_records import PlaybookMove

#: Appended to a move's id for the node that applies its declared ``fix``.
FIX_SUFFIX = ":fix"


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
    """The move a node applied: its id without the repair suffix."""
    return move_id.removesuffix(FIX_SUFFIX) if move_id else move_id


def moves_on_lineage(context: AgentContext) -> tuple[set[str], set[str]]:
    """(moves applied in the parent's lineage, moves tried from any node of it)."""
    lineage = lineage_of(context.tree, context.parent.id)
    lineage_ids = {n.id for n in lineage}
    applied = {m for n in lineage if (m := _base_move(n.move_id))}
    tried = set(applied)
    for node in context.tree:
        if node.parent_id in lineage_ids and (move := _base_move(node.move_id)):
            tried.add(move)
    return applied, tried


def applicable_moves(context: AgentContext) -> list[PlaybookMove]:
    """Untried moves, in rank order, whose prerequisites are applied and whose edits apply."""
    applied, tried = moves_on_lineage(context)
    usable = []
    for move in sorted(context.playbook, key=lambda m: (m.rank, m.id)):
        if move.id in tried or not set(move.requires) <= applied:
            continue
        try:
            apply_edits(context.parent_source, move.edits, context.editable_files)
        except EditError:
            continue  # an anchor is absent from this parent: a move for another seed
        usable.append(move)
    return usable


#: Below this similarity (same family, another task type or metric) a move that only hurt
#: keeps its static rank: on rel-flights the move that hurt AUROC on plane-delay
#: (recency-weight) was the best one for NMAE on plane-arr-delay (bench/knowledge_transfer.py).
DEMOTE_FROM_SIMILARITY = 0.8


def order_by_knowledge(moves: list[PlaybookMove], context: AgentContext) -> list[PlaybookMove]:
    """``moves`` ordered by past verified gains on similar tasks, else kept in rank order.

    From the context's knowledge digest (``move_stats``): moves whose gain held up before
    come first (most verified gains, then the largest mean gain); moves with no verified
    gain keep their static order after them; moves that only ever hurt on a task of the
    same kind (similarity >= :data:`DEMOTE_FROM_SIMILARITY`: same task type and metric) go
    last. With no knowledge (``--no-kg``, a first run) the order is unchanged.
    """
    stats = context.knowledge.move_stats if context.knowledge is not None else {}
    if not stats:
        return list(moves)

    def key(item: tuple[int, PlaybookMove]) -> tuple[int, int, float, int]:
        index, move = item
        stat = stats.get(move.id)
        if stat is None or stat.tries == 0:
            return (1, 0, 0.0, index)
        mean = stat.mean_gain or 0.0
        if stat.held > 0 and mean > 0:
            return (0, -stat.held, -mean, index)
        if stat.worse > 0 and stat.held == 0 and stat.similarity >= DEMOTE_FROM_SIMILARITY:
            return (2, 0, 0.0, index)
        return (1, 0, 0.0, index)

    return [move for _, move in sorted(enumerate(moves), key=key)]


def move_proposal(move: PlaybookMove, why: str = "") -> Proposal:
    """The proposal that applies ``move`` (``why``: appended to its rationale)."""
    why = f"; {why}" if why else ""
    return Proposal(
        hypothesis=move.hypothesis,
        edits=move.edits,
        move_id=move.id,
        rationale=f"playbook move {move.id} (rank {move.rank}){why}",
    )


def fix_proposal(context: RepairContext) -> Proposal | None:
    """The failed node's declared fix when its move has one that applies, else ``None``."""
    move_id = context.parent.move_id
    if not move_id or move_id.endswith(FIX_SUFFIX):
        return None  # not a playbook move, or its fix already failed
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
