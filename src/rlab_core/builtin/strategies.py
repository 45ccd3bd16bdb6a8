"""Built-in search strategies: ``best-first`` and ``tree``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rlab_core.builtin.convergence import common_stop_reason
from rlab_core.interfaces import Step, Strategy, StrategyState
from rlab_core.records import Node, NodeKind


def _ranked(state: StrategyState) -> list[Node]:
    """Parent candidates, best first: evaluated at full fidelity and not exhausted.

    The run's best (under its acceptance rule: a gain within the noise does not make a
    best) comes first, then the others by score.
    """
    nodes = [n for n in state.tree.full_fidelity() if n.id not in state.exhausted]
    sign = -1.0 if state.tree.higher_is_better else 1.0
    best = state.tree.best()
    # stable sort keeps the earliest node first among equal scores
    return sorted(
        nodes,
        key=lambda n: (n is not best, sign * n.score.primary),  # type: ignore[union-attr]
    )


class BestFirstConfig(BaseModel):
    """Options of ``best-first``."""

    model_config = ConfigDict(extra="forbid")


class BestFirst(Strategy[BestFirstConfig]):
    """Expand the best measured node, one hypothesis per iteration.

    Failed branches are never parents; when the agent has nothing left for the best node,
    the next best is expanded.
    """

    def next_steps(self, state: StrategyState, capacity: int = 1) -> list[Step]:
        ranked = _ranked(state)
        return [Step(parent_id=ranked[0].id)] if ranked else []

    def stop_reason(self, state: StrategyState) -> str | None:
        return common_stop_reason(state.tree, state.rules)


class TreeConfig(BaseModel):
    """Options of ``tree``."""

    model_config = ConfigDict(extra="forbid")

    num_drafts: int = Field(default=3, ge=0, description="Children drafted from the seeds first.")
    node_expansion_limit: int = Field(
        default=3, ge=1, description="Most improve-children per node."
    )
    exploration: float = Field(
        default=0.1, ge=0, le=1, description="Chance of expanding a random node."
    )


class TreeSearch(Strategy[TreeConfig]):
    """AIDE-style greedy tree: draft from the seeds, then improve the best, sometimes explore."""

    def _open(self, state: StrategyState, node: Node) -> bool:
        made = [c for c in state.tree.children(node.id) if c.kind != NodeKind.DEBUG]
        running = state.running.get(node.id, 0)
        return len(made) + running < self.config.node_expansion_limit

    def next_steps(self, state: StrategyState, capacity: int = 1) -> list[Step]:
        tree = state.tree
        drafts = sum(1 for n in tree if n.kind == NodeKind.DRAFT) + state.running_drafts
        seeds = [s for s in tree.seeds() if s.full_fidelity and s.id not in state.exhausted]
        if drafts < self.config.num_drafts and seeds:
            return [Step(parent_id=seeds[drafts % len(seeds)].id, kind="draft")]
        open_nodes = [n for n in _ranked(state) if self._open(state, n)]
        if not open_nodes:
            return []
        if len(open_nodes) > 1 and state.rng.random() < self.config.exploration:
            return [Step(parent_id=state.rng.choice(open_nodes[1:]).id)]
        return [Step(parent_id=open_nodes[0].id)]

    def stop_reason(self, state: StrategyState) -> str | None:
        return common_stop_reason(state.tree, state.rules)
