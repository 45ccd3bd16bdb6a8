"""Seed replicates for the finalists: the node a run hands to ``rlab final``.

Before a run ends, the best few nodes by validation — among the nodes accepted under the
run's rule (seeds and every gain that held up), or among all evaluated nodes under
``acceptance: any`` — run again with other ``RLAB_SEED`` values. The chosen node is the
one with the best mean validation over its seeds (its own run counts as one); a node whose
program fails under another seed ranks after those that never fail. Every replicate and the
choice are journaled (:class:`~rlab_core.events.ReplicateScored`,
:class:`~rlab_core.events.FinalistsChosen`), so a resumed run re-runs only what is missing.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from rlab_core.events import FinalistsChosen
from rlab_core.records import Node
from rlab_core.replicates import Replicator, seeds_after
from rlab_core.tree import Tree


@dataclass(frozen=True)
class FinalistSettings:
    """How many finalists, how many extra seeds each, and the rule they were accepted by."""

    count: int = 0
    seeds: int = 0
    base_seed: int = 0
    workers: int = 1
    acceptance: str = "significant"
    confidence: float = 0.9

    @property
    def extra_seeds(self) -> list[int]:
        return seeds_after(self.base_seed, self.seeds)


def finalist_pool(tree: Tree, acceptance: str) -> list[Node]:
    """Nodes that may be chosen, best score first (earliest first among equals)."""
    pool = tree.accepted() if acceptance == "significant" else tree.full_fidelity()
    sign = -1.0 if tree.higher_is_better else 1.0
    return sorted(pool, key=lambda n: sign * n.score.primary)  # type: ignore[union-attr]


def reserve_s(
    tree: Tree, settings: FinalistSettings, done: Mapping[str, Collection[int]] | None = None
) -> float:
    """Seconds the finalists' replicates should take (a search keeps them back from its time).

    The median full-fidelity candidate's time for each replicate still missing: the current
    finalists' seeds not in ``done`` (node id -> seeds already replicated, the noise
    measurement's included) and every seed of the finalists still to come.
    """
    walls = sorted(n.timing.candidate_s for n in tree.full_fidelity())
    if not walls or not settings.count or not settings.seeds:
        return 0.0
    done = done or {}
    pool = finalist_pool(tree, settings.acceptance)[: settings.count]
    runs = sum(1 for n in pool for s in settings.extra_seeds if s not in done.get(n.id, ()))
    runs += max(0, settings.count - len(pool)) * settings.seeds
    return walls[len(walls) // 2] * runs / max(1, settings.workers)


def selection_rule(settings: FinalistSettings, finalists: int, seeds_run: int) -> str:
    """The rule that chose the node, in words (``final_report.json`` says it)."""
    among = (
        f"among the {finalists} best nodes accepted at {settings.confidence:.0%}"
        if settings.acceptance == "significant"
        else f"among the {finalists} best evaluated nodes (acceptance: any gain)"
    )
    return f"chosen by mean validation over {seeds_run} seeds {among}"


def single_rule(settings: FinalistSettings) -> str:
    """The rule when no replicates ran: the best under the acceptance rule."""
    if settings.acceptance == "significant":
        return (
            f"the best validation score among nodes accepted at {settings.confidence:.0%} "
            "(no seed replicates)"
        )
    return "the best validation score (acceptance: any gain; no seed replicates)"


class FinalistRound:
    """Runs the missing replicates of the finalists and journals the choice."""

    def __init__(self, *, settings: FinalistSettings, tree: Tree, replicator: Replicator) -> None:
        self.settings = settings
        self.tree = tree
        self.replicator = replicator

    def choose(self) -> Node | None:
        """Replicate the finalists, record and return the chosen node (``None``: nothing to do)."""
        settings = self.settings
        finalists = finalist_pool(self.tree, settings.acceptance)[: settings.count]
        if not finalists or not settings.seeds:
            return None
        self.replicator.ensure(finalists, settings.extra_seeds, settings.workers)
        rows = [self._row(node) for node in finalists]
        # nodes whose program never failed under another seed first, then by mean
        sign = -1.0 if self.tree.higher_is_better else 1.0
        ranked = sorted(rows, key=lambda r: (bool(r["failures"]), sign * r["mean"]))
        seeds_run = min(len(r["scores"]) for r in rows)
        rule = selection_rule(settings, len(finalists), seeds_run)
        if any(len(r["scores"]) + len(r["failures"]) < 1 + settings.seeds for r in rows):
            rule += " (some replicates did not run: the time budget was spent)"
        chosen = ranked[0]["node"]
        self.replicator.recorder.record(FinalistsChosen(node_id=chosen, rule=rule, finalists=rows))
        self.tree.choose(chosen, rule)
        return self.tree.get(chosen)

    def _row(self, node: Node) -> dict[str, Any]:
        replicated, failures = self.replicator.outcomes(node, self.settings.extra_seeds)
        scores = {str(self.settings.base_seed): node.score.primary, **replicated}  # type: ignore[union-attr]
        values = list(scores.values())
        return {
            "node": node.id,
            "scores": scores,
            "failures": failures,
            "mean": statistics.fmean(values),
            "spread": statistics.stdev(values) if len(values) > 1 else 0.0,
        }
