"""How the dashboard and ``rlab show --tree`` label a node: six outcomes plus "running".

The journal's :class:`~rlab_core.records.NodeStatus` says whether a node was scored; the
views say what became of it. "The winner's path" is the chosen node (:meth:`Tree.selected`:
the finalists' choice, else the best accepted node) and its ancestors.

- ``improved`` (improved, kept): an evaluated agent-made node that beat its nearest evaluated
  ancestor (:meth:`Tree.improved_on_parent`: beyond the noise where the gain was measured, so
  a gain within noise is no improvement) and lies on the winner's path: its change is in
  the code the run hands over;
- ``improved_off_path`` (improved, off path): such an improvement on a branch the run did not
  choose in the end;
- ``evaluated``: every other evaluated node (seeds, gains within noise, losses), on the
  path or off it;
- ``failed``: failed and not repaired: no repair was tried (the agent had none, the budget
  ran out, repairs are off) or one may still come;
- ``repaired``: failed, but a repair of it (a ``debug`` node whose ``repair_of`` is this
  node, or the failure this node was itself a failed attempt to repair) below it evaluated;
- ``recovered_failure`` (repair failed): failed, repairs were tried and all failed too, so
  the branch is closed;
- ``running``: started but not finished (a run in progress, or killed).

:func:`failure_cause` says in two words why a failed node failed (timeout, out of memory,
contract, crash with its exit code, ...), with the journal's sentence as the detail.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from rlab_core.records import FailureStage, Node, NodeKind, NodeStatus
from rlab_core.tree import Tree


class Outcome(StrEnum):
    """What became of a node, for colouring."""

    IMPROVED = "improved"
    IMPROVED_OFF_PATH = "improved_off_path"
    EVALUATED = "evaluated"
    FAILED = "failed"
    REPAIRED = "repaired"
    RECOVERED_FAILURE = "recovered_failure"
    RUNNING = "running"


OUTCOME_LABEL = {
    Outcome.IMPROVED: "improved, kept",
    Outcome.IMPROVED_OFF_PATH: "improved, off path",
    Outcome.EVALUATED: "evaluated",
    Outcome.FAILED: "failed",
    Outcome.REPAIRED: "repaired",
    Outcome.RECOVERED_FAILURE: "repair failed",
    Outcome.RUNNING: "running",
}

#: rich styles of the terminal views
OUTCOME_STYLE = {
    Outcome.IMPROVED: "green",
    Outcome.IMPROVED_OFF_PATH: "dim green",
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
    repaired_failures = {
        n.repair_of for n in tree if n.evaluated and n.repair_of is not None
    }  # failures whose repair chain ended in a scored node
    attempted = {n.repair_of for n in tree if n.repair_of is not None}  # a repair was built
    outcomes: dict[str, Outcome] = {}
    for node in tree:
        if node.evaluated:
            improved = node.kind != NodeKind.SEED and tree.improved_on_parent(node)
            if not improved:
                outcomes[node.id] = Outcome.EVALUATED
            else:
                outcomes[node.id] = (
                    Outcome.IMPROVED if node.id in on_path else Outcome.IMPROVED_OFF_PATH
                )
        elif _was_repaired(tree, node.id, repaired_failures):
            outcomes[node.id] = Outcome.REPAIRED
        elif node.status == NodeStatus.RECOVERED_FAILURE and (
            node.repair_of is not None or node.id in attempted
        ):
            # a branch closed without any repair node (the agent had no repair) merely failed
            outcomes[node.id] = Outcome.RECOVERED_FAILURE
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


class FailureCause(NamedTuple):
    """Why a node failed: a label of a word or two, and the journal's sentence."""

    label: str
    detail: str


#: what a sandbox's ``killed_by`` means, in a word or two
_KILLED = {
    "timeout": "timeout",
    "memory": "out of memory",
    "output": "too much output",
    "disk": "disk limit",
    "signal": "killed by signal",
    "cancelled": "interrupted",
}
_STAGE = {
    FailureStage.AGENT: "agent error",
    FailureStage.EDIT: "edit refused",
    FailureStage.GUARD: "guard refused",
    FailureStage.SANDBOX: "sandbox error",
    FailureStage.CONTRACT: "contract",
    FailureStage.SCORE: "scoring failed",
}


def failure_cause(node: Node) -> FailureCause | None:
    """Why ``node`` failed (``None`` when it did not): timeout, out of memory, crash (exit 1)...

    A run or smoke failure is named by what the sandbox saw (a limit that killed it, else
    the exit code); every other stage by the stage. The smoke run's causes say "smoke".
    """
    failure = node.failure
    if failure is None:
        return None
    detail = f"{failure.stage} stage: {failure.message}"
    if failure.stage not in (FailureStage.RUN, FailureStage.SMOKE):
        return FailureCause(_STAGE.get(failure.stage, str(failure.stage)), detail)
    execution = node.execution
    if execution is not None and execution.killed_by is not None:
        label = _KILLED.get(execution.killed_by, execution.killed_by)
    elif execution is not None and execution.exit_code not in (None, 0):
        label = f"crash (exit {execution.exit_code})"
    else:
        label = "crash"
    return FailureCause(f"smoke {label}" if failure.stage == FailureStage.SMOKE else label, detail)
