"""Budgets: iterations, wall-clock, tokens and cost; the stop reasons and stages they give."""

from __future__ import annotations

from dataclasses import dataclass

from rlab_core.agent_context import BudgetProgress
from rlab_core.tree import Tree


@dataclass(frozen=True)
class Budgets:
    """The run's budgets; ``None`` is unbounded."""

    iterations: int | None = None
    time_budget_s: float | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


def progress_of(tree: Tree, budgets: Budgets, elapsed_s: float) -> BudgetProgress:
    """How much of each budget the run has used so far."""
    tokens = sum(n.usage.total_tokens for n in tree)
    cost = sum(n.usage.cost_usd for n in tree)
    return BudgetProgress(
        iterations_used=tree.iterations_used(),
        iterations_max=budgets.iterations,
        elapsed_s=elapsed_s,
        time_budget_s=budgets.time_budget_s,
        tokens_used=tokens,
        max_tokens=budgets.max_tokens,
        cost_used=cost,
        max_cost=budgets.max_cost,
    )


def budget_stop_reason(progress: BudgetProgress, reserve_s: float = 0.0) -> str | None:
    """The first exhausted budget, in words, or ``None``.

    ``reserve_s`` (at most half the time budget) is kept back from the time budget for
    work after the search: the finalists' seed replicates.
    """
    p = progress
    if p.iterations_max is not None and p.iterations_used >= p.iterations_max:
        return f"iteration budget reached ({p.iterations_used}/{p.iterations_max})"
    if p.time_budget_s is not None:
        kept = min(reserve_s, p.time_budget_s / 2)
        if p.elapsed_s >= p.time_budget_s - kept:
            held = f", {kept:.0f}s kept for the finalists" if kept else ""
            return f"time budget reached ({p.elapsed_s:.0f}s of {p.time_budget_s:.0f}s{held})"
    if p.max_tokens is not None and p.tokens_used >= p.max_tokens:
        return f"token budget reached ({p.tokens_used} of {p.max_tokens})"
    if p.max_cost is not None and p.cost_used >= p.max_cost:
        return f"cost budget reached (${p.cost_used:.2f} of ${p.max_cost:.2f})"
    return None


#: Below this share of the budget a staged task runs its ``mini`` stage (subsampled data).
MINI_STAGE_BELOW = 0.35
#: From this share of the budget a staged task runs its ``ensemble`` stage.
ENSEMBLE_STAGE_FROM = 0.80


def stage_by_progress(
    progress: BudgetProgress,
    *,
    mini_below: float = MINI_STAGE_BELOW,
    ensemble_from: float = ENSEMBLE_STAGE_FROM,
) -> str:
    """The standard stage for a task that scales its work with the budget used.

    ``mini`` below ``mini_below`` of the largest bounded budget, ``ensemble`` from
    ``ensemble_from``, ``full`` between. A run with no bounded budget is always ``full``.
    """
    fraction = progress.fraction
    if fraction < mini_below and _bounded(progress):
        return "mini"
    if fraction >= ensemble_from:
        return "ensemble"
    return "full"


def _bounded(progress: BudgetProgress) -> bool:
    p = progress
    return any((p.iterations_max, p.time_budget_s, p.max_tokens, p.max_cost))
