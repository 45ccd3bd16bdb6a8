"""Stop rules shared by the built-in strategies: target reached and convergence.

Convergence under ``acceptance: significant``: no node was accepted (a gain beyond the
noise over the best) in the last ``window`` evaluated iterations; under ``any``: the best
score gained at most ε over them.
"""

from __future__ import annotations

from rlab_core.interfaces import StopRules
from rlab_core.records import NodeKind
from rlab_core.tree import Tree


def target_reason(tree: Tree, rules: StopRules) -> str | None:
    """Stop once the best validation score reaches ``target_val``."""
    best = tree.best()
    if rules.target_val is None or best is None or best.score is None:
        return None
    score = best.score
    reached = (
        score.primary >= rules.target_val
        if score.higher_is_better
        else score.primary <= rules.target_val
    )
    if reached:
        return f"target reached: {score.primary_metric} {score.primary:.6g} (target {rules.target_val:g}) at {best.id}"
    return None


def convergence_reason(tree: Tree, rules: StopRules) -> str | None:
    """Stop when the last ``window`` evaluated iterations brought no gain that counts.

    Only agent-made evaluated nodes count as iterations of the window; seeds set the start.
    Never fires before ``min_iterations`` agent iterations.
    """
    if tree.iterations_used() < rules.min_iterations:
        return None
    evaluated = tree.evaluated()
    history = tree.best_history()
    positions = [i for i, n in enumerate(evaluated) if n.kind != NodeKind.SEED]
    if len(positions) < rules.window:
        return None
    # best before the window started vs best now
    start = positions[-rules.window] - 1
    if start < 0:
        return None
    before, now = history[start], history[-1]
    higher = evaluated[-1].score.higher_is_better  # type: ignore[union-attr]
    gain = (now - before) if higher else (before - now)
    if rules.acceptance == "significant" and any(n.accepted is not None for n in evaluated):
        # every raise of the best was a gain beyond the noise: none in the window is the stop
        if gain > 0:
            return None
        return (
            f"converged: no significant gain (one-sided {rules.confidence:.0%}) over the best "
            f"in the last {rules.window} evaluated iterations"
        )
    if gain <= rules.epsilon:
        return (
            f"converged: best validation score gained {gain:.6g} (<= epsilon {rules.epsilon:g}) "
            f"over the last {rules.window} evaluated iterations"
        )
    return None


def common_stop_reason(tree: Tree, rules: StopRules) -> str | None:
    """Target first (it is good news), then convergence."""
    return target_reason(tree, rules) or convergence_reason(tree, rules)
