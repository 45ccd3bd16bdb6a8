"""Stop rules shared by the built-in strategies: target reached and convergence.

Convergence under ``acceptance: significant``: nothing was accepted (a gain beyond the
noise over the best) since the ``window``-th last evaluated change of the code began;
under ``any``: the best score gained at most ε since then. Tuning trials are not changes of
the code, and tuning is a kind of move of its own: no convergence while the best node
declares tunable parameters its study has tried fewer times than
:func:`tuning_trials_needed` (then the loop tunes it, :mod:`rlab_core.core_steps`); a search
that only tunes ends by :func:`tuning_stall_reason`.
"""

from __future__ import annotations

from rlab_core.interfaces import StopRules
from rlab_core.records import PROMOTE, SCREEN_REFERENCE, TUNE, Node, NodeKind
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


#: Most trials a stalled best's study needs before the run may converge.
MAX_TRIALS_BEFORE_CONVERGING = 20


def tuning_trials_needed(best: Node, rules: StopRules) -> int:
    """Trials the best's study needs before a stall may end the run: two per declared
    parameter (TPE's random start is one per parameter; the second half is its model's),
    at least ``window``, at most :data:`MAX_TRIALS_BEFORE_CONVERGING`."""
    if not best.tunables:
        return 0
    return min(MAX_TRIALS_BEFORE_CONVERGING, max(rules.window, 2 * len(best.tunables)))


def study_trials(tree: Tree, best: Node) -> int:
    """Trials (any outcome, any fidelity, counted once) of the study that tunes ``best``."""
    base = best.tuning.base if best.tuning is not None else best.id
    return len({n.tuning.number for n in tree if n.tuning is not None and n.tuning.base == base})


def untried_tuning(tree: Tree, rules: StopRules, running: list[str] | None = None) -> Node | None:
    """The best node when it declares tunables its study has not tried enough, else ``None``.

    ``running``: the bases of tuning trials still running (they count as tried).
    """
    best = tree.best()
    if best is None:
        return None
    base = best.tuning.base if best.tuning is not None else best.id
    tried = study_trials(tree, best) + sum(1 for b in running or [] if b == base)
    return best if tried < tuning_trials_needed(best, rules) else None


def convergence_reason(tree: Tree, rules: StopRules) -> str | None:
    """Stop when the last ``window`` evaluated changes of the code brought no gain that
    counts (:func:`stall_reason`), or a search that only tunes stopped gaining
    (:func:`tuning_stall_reason`). Never before ``min_iterations`` agent iterations, nor
    while tuning the best is untried (:func:`untried_tuning`).
    """
    if untried_tuning(tree, rules) is not None:
        return None
    return stall_reason(tree, rules) or tuning_stall_reason(tree, rules)


#: How many times the trials a best needs may pass without a gain once no change of the
#: code comes any more (an agent that only tunes): then its study is spent too.
TUNING_STALL_FACTOR = 3


def tuning_stall_reason(tree: Tree, rules: StopRules) -> str | None:
    """Stop when nothing raised the best over the last ``window`` + 3 * (the trials the best
    needs) evaluated nodes of any kind: a search that only tunes still ends."""
    best = tree.best()
    if best is None or not best.tunables:
        return None
    span = rules.window + TUNING_STALL_FACTOR * tuning_trials_needed(best, rules)
    evaluated = tree.evaluated()
    positions = [i for i, n in enumerate(evaluated) if n.kind != NodeKind.SEED]
    if len(positions) < span or positions[-span] == 0:
        return None
    history = tree.best_history()
    if history[positions[-span] - 1] != history[-1]:
        return None
    return (
        f"converged: nothing raised the best over the last {span} evaluated nodes, tuning included"
    )


def structural(node: Node) -> bool:
    """An agent's change of the code: not a seed, a tuning trial or the core's re-run."""
    return (
        node.kind != NodeKind.SEED
        and node.tuning is None
        and node.move_id not in (TUNE, PROMOTE, SCREEN_REFERENCE)
    )


def stall_reason(tree: Tree, rules: StopRules) -> str | None:
    """The convergence reason read from the best's history alone, whatever is untried.

    The window counts structural iterations (:func:`structural`): the best gained nothing
    since the ``window``-th last change of the code began, whatever tuning trials ran in
    between (their own kind of move is waited for by :func:`untried_tuning`).
    """
    if tree.iterations_used() < rules.min_iterations:
        return None
    evaluated = tree.evaluated()
    history = tree.best_history()
    positions = [i for i, n in enumerate(evaluated) if structural(n)]
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
            f"since the last {rules.window} evaluated changes of the code began"
        )
    if gain <= rules.epsilon:
        return (
            f"converged: best validation score gained {gain:.6g} (<= epsilon {rules.epsilon:g}) "
            f"since the last {rules.window} evaluated changes of the code began"
        )
    return None


def common_stop_reason(tree: Tree, rules: StopRules) -> str | None:
    """Target first (it is good news), then convergence."""
    return target_reason(tree, rules) or convergence_reason(tree, rules)
