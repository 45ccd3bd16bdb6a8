"""How the dashboard and ``rlab show --tree`` colour a node: five outcomes plus "running".

The journal's :class:`~rlab_core.records.NodeStatus` says whether a node was scored; the
views say what became of it:

- ``improved`` (improved and kept): an evaluated agent-made node that beat its nearest
  evaluated ancestor (:meth:`Tree.improved_on_parent`: beyond the noise where the gain was
  measured, so a gain within noise is no improvement) and either lies on the winner's path
  or became the run's best when it finished (it was accepted);
- ``evaluated`` (evaluated, not kept): every other evaluated node, seeds included;
- ``failed``: failed and not (yet) repaired;
- ``repaired``: failed, but a repair of it (a ``debug`` node whose ``repair_of`` is this
  node, or the failure this node was itself a failed attempt to repair) below it evaluated;
- ``recovered_failure``: failed, and its repairs gave out (the branch is closed);
- ``running``: started but not finished (a run in progress, or killed).
"""

from __future__ import annotations

from enum import StrEnum

from rlab_core.records import Node, NodeKind, NodeStatus
from rlab_core.tree import Tree


class Outcome(StrEnum):
    """What became of a node, for colouring."""

    IMPROVED = "improved"
    EVALUATED = "evaluated"
    FAILED = "failed"
    REPAIRED = "repaired"
    RECOVERED_FAILURE = "recovered_failure"
    RUNNING = "running"


OUTCOME_LABEL = {
    Outcome.IMPROVED: "improved, kept",
    Outcome.EVALUATED: "evaluated, not kept",
    Outcome.FAILED: "failed",
    Outcome.REPAIRED: "repaired",
    Outcome.RECOVERED_FAILURE: "recovered failure",
    Outcome.RUNNING: "running",
}

#: rich styles of the terminal views
OUTCOME_STYLE = {
    Outcome.IMPROVED: "green",
    Outcome.EVALUATED: "blue",
    Outcome.FAILED: "red",
    Outcome.REPAIRED: "yellow",
    Outcome.RECOVERED_FAILURE: "magenta",
    Outcome.RUNNING: "cyan",
}


def winner_path(tree: Tree) -> list[str]:
    """Ids from the root to the node the run chose (empty when nothing was evaluated)."""
    best = tree.selected()
    return [n.id for n in tree.lineage(best.id)] if best is not None else []


def best_after_each(tree: Tree) -> list[tuple[Node, Node]]:
    """Each evaluated node, in finishing order, with the run's best once it had finished."""
    return [(node, best) for node, best in tree.best_after_each() if best is not None]


def new_best_ids(tree: Tree) -> set[str]:
    """Evaluated nodes that became the run's best when they finished (the first one included)."""
    return {node.id for node, best in best_after_each(tree) if best.id == node.id}


def classify(tree: Tree) -> dict[str, Outcome]:
    """The :class:`Outcome` of every finished node, by id."""
    on_path = set(winner_path(tree))
    new_best = new_best_ids(tree)
    repaired_failures = {
        n.repair_of for n in tree if n.evaluated and n.repair_of is not None
    }  # failures whose repair chain ended in a scored node
    outcomes: dict[str, Outcome] = {}
    for node in tree:
        if node.status == NodeStatus.RECOVERED_FAILURE:
            outcomes[node.id] = Outcome.RECOVERED_FAILURE
        elif node.evaluated:
            kept = node.id in on_path or node.id in new_best
            improved = node.kind != NodeKind.SEED and tree.improved_on_parent(node)
            outcomes[node.id] = Outcome.IMPROVED if kept and improved else Outcome.EVALUATED
        elif _was_repaired(tree, node.id, repaired_failures):
            outcomes[node.id] = Outcome.REPAIRED
        else:
            outcomes[node.id] = Outcome.FAILED
    return outcomes


def _was_repaired(tree: Tree, node_id: str, repaired_failures: set[str]) -> bool:
    """A failed node is repaired when an evaluated repair of its branch lies below it."""
    node = tree.nodes[node_id]
    origin = node.repair_of or node.id  # a failed repair attempt belongs to the original failure
    if origin not in repaired_failures:
        return False
    return any(
        child.repair_of == origin
        and (child.evaluated or _was_repaired(tree, child.id, repaired_failures))
        for child in tree.children(node_id)
    )
