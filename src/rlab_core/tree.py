"""The search tree: nodes by id, the best node, lineages and failed branches.

The tree is never stored on its own: it is a fold over the journal (see
:mod:`rlab_core.journal`), so it is always exactly what the evidence says.
"""

from __future__ import annotations

from collections.abc import Iterator

from rlab_core.agent_context import NodeSummary
from rlab_core.records import Node, NodeKind, NodeStatus


class Tree:
    """Nodes of one run, in the order they finished."""

    def __init__(self, higher_is_better: bool = True) -> None:
        self.higher_is_better = higher_is_better
        self.nodes: dict[str, Node] = {}
        self.closed_reasons: dict[str, str] = {}
        #: The node the finalists' seed replicates chose, while no later node has finished.
        self.chosen_id: str | None = None
        #: The rule that chose it, in words.
        self.chosen_rule: str | None = None
        self._children: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ building

    def add(self, node: Node) -> None:
        """Add (or replace) a finished node."""
        if node.id not in self.nodes and node.parent_id is not None:
            self._children.setdefault(node.parent_id, []).append(node.id)
        self.nodes[node.id] = node
        if node.score is not None:
            self.higher_is_better = node.score.higher_is_better
            # a node after the finalists' choice reopens the choice
            self.chosen_id = self.chosen_rule = None

    def choose(self, node_id: str, rule: str) -> None:
        """Record the finalists' choice (see :mod:`rlab_core.finalists`)."""
        self.chosen_id, self.chosen_rule = node_id, rule

    def close_branch(self, node_ids: list[str], reason: str) -> None:
        """Mark failed nodes whose repairs also failed as ``recovered_failure``."""
        for node_id in node_ids:
            node = self.nodes.get(node_id)
            if node is not None and node.status != NodeStatus.EVALUATED:
                node.status = NodeStatus.RECOVERED_FAILURE
                self.closed_reasons[node_id] = reason

    # ------------------------------------------------------------------ queries

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def get(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def children(self, node_id: str) -> list[Node]:
        return [self.nodes[c] for c in self._children.get(node_id, [])]

    def evaluated(self) -> list[Node]:
        """Nodes with a validation score, in finishing order."""
        return [n for n in self.nodes.values() if n.evaluated]

    def seeds(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == NodeKind.SEED]

    def iterations_used(self) -> int:
        """Agent-made nodes so far (repairs included); seeds do not count."""
        return sum(1 for n in self.nodes.values() if n.kind != NodeKind.SEED)

    def can_be_parent(self, node_id: str) -> bool:
        """Only nodes evaluated at full fidelity are parents; failed branches never are."""
        node = self.nodes.get(node_id)
        return node is not None and node.full_fidelity

    def best(self) -> Node | None:
        """The run's best node: the best score among accepted nodes (earliest wins ties).

        A node is accepted when it beat the best of its lineage under the run's acceptance
        rule (:mod:`rlab_core.acceptance`): a gain within the noise never makes a best.
        Records from before the rule (``accepted`` is ``None``) compete by score.
        """
        best: Node | None = None
        for node in self.accepted():
            if best is None or node.score.better_than(best.score):  # type: ignore[union-attr]
                best = node
        return best

    def accepted(self) -> list[Node]:
        """Evaluated nodes that may be the best (seeds included), in finishing order.

        Only full-fidelity scores compete: a ``mini`` screen is evidence for promoting a
        change, never a result (:mod:`rlab_core.screening`).
        """
        return [n for n in self.full_fidelity() if n.accepted is not False]

    def full_fidelity(self) -> list[Node]:
        """Nodes evaluated at full fidelity, in finishing order: the possible bests and parents."""
        return [n for n in self.evaluated() if n.fidelity == "full"]

    def selected(self) -> Node | None:
        """The node the run hands to ``rlab final``: the finalists' choice, else :meth:`best`."""
        if self.chosen_id is not None and self.chosen_id in self.nodes:
            chosen = self.nodes[self.chosen_id]
            if chosen.evaluated:
                return chosen
        return self.best()

    def top_ids(self, k: int) -> list[str]:
        """Ids of the ``k`` best full-fidelity nodes, best first (earliest wins ties)."""
        ranked = sorted(
            self.full_fidelity(),
            key=lambda n: n.score.primary if n.score.higher_is_better else -n.score.primary,  # type: ignore[union-attr]
            reverse=True,
        )
        return [n.id for n in ranked[:k]]

    def best_after_each(self) -> list[tuple[Node, Node | None]]:
        """Each evaluated node, in finishing order, with the run's best once it had finished.

        :meth:`best` applied along the run in one pass: a node that is not accepted never
        becomes the best, whatever its score.
        """
        pairs: list[tuple[Node, Node | None]] = []
        best: Node | None = None
        for node in self.evaluated():
            if (
                node.accepted is not False
                and node.fidelity == "full"
                and (
                    best is None or node.score.better_than(best.score)  # type: ignore[union-attr]
                )
            ):
                best = node
            pairs.append((node, best))
        return pairs

    def best_history(self) -> list[float]:
        """The best node's primary score after each evaluated node, in finishing order."""
        return [
            best.score.primary if best and best.score else float("nan")
            for _, best in self.best_after_each()
        ]

    def lineage(self, node_id: str) -> list[Node]:
        """The node and its ancestors, root first."""
        chain: list[Node] = []
        current: str | None = node_id
        while current is not None and current in self.nodes:
            chain.append(self.nodes[current])
            current = self.nodes[current].parent_id
        return list(reversed(chain))

    def improved_on_parent(self, node: Node) -> bool:
        """True when the node beat the nearest evaluated ancestor (or is an evaluated seed).

        Beyond the noise where the gain was measured (its verdict), by score otherwise.
        """
        if not node.evaluated:
            return False
        if node.gain is not None and node.gain.verdict != "unmeasured":
            return node.gain.significant
        current = node.parent_id
        while current is not None and current in self.nodes:  # usually one step: the parent
            ancestor = self.nodes[current]
            if ancestor.evaluated:
                return node.score.better_than(ancestor.score)  # type: ignore[union-attr]
            current = ancestor.parent_id
        return True

    def summaries(self) -> list[NodeSummary]:
        """What agents may see of every node: validation evidence only."""
        return [self.summary(n) for n in self.nodes.values()]

    def summary(self, node: Node) -> NodeSummary:
        failure = None
        if node.failure is not None:
            failure = f"[{node.failure.stage}] {node.failure.message}"
        return NodeSummary(
            id=node.id,
            parent_id=node.parent_id,
            kind=node.kind,
            status=str(node.status),
            hypothesis=node.hypothesis,
            move_id=node.move_id,
            diff=node.diff,
            primary=node.score.primary if node.score else None,
            standard_error=node.score.standard_error if node.score else None,
            verdict=node.gain.verdict if node.gain else None,
            metrics=dict(node.score.metrics) if node.score else {},
            improved_on_parent=self.improved_on_parent(node),
            failure=failure,
            repair_of=node.repair_of,
            tuning=node.tuning,
            fidelity=node.fidelity,
            accepted=node.accepted,
            tunables=list(node.tunables),
        )
