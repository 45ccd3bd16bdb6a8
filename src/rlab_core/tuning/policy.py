"""When an agent tunes instead of changing the code: a pure function of the tree.

Read from the tree the agent sees (oldest first, running jobs last) and the parent alone,
so a resumed run and every worker decide alike. The words, precisely:

- A **tuning trial** is a node that ran a :class:`~rlab_core.records.TuningTrial`; a
  ``promote`` re-run carries its screen's trial and is not another trial.
- A **structural node** is a change an agent made to the code: a draft or an improvement
  that is not a tuning trial, not a repair, and not one of the core's re-runs (``promote``,
  ``screen-reference``).
- A structural node is **accepted** when the run's acceptance rule took it
  (:attr:`~rlab_core.agent_context.NodeSummary.accepted`), or took its promotion to full
  fidelity or a repair of it (they carry out the same change).
- The search has **stalled** when the last ``stall`` finished structural nodes made since
  the latest tuning trial (of any study) are all unaccepted. Running ones are not judged
  yet and do not count.
- The **burst** is the trailing run of tuning trials on the parent's study (running ones
  included): from the end of the tree back to the latest finished structural node or a
  trial of another study; seeds, repairs and the core's re-runs do not interrupt it.
"""

from __future__ import annotations

from typing import Literal

from rlab_core.agent_context import AgentContext, NodeSummary
from rlab_core.records import PROMOTE, SCREEN_REFERENCE, TUNE, NodeKind
from rlab_core.tuning.space import TunableParam, TunableSpecError, declared_params
from rlab_core.tuning.study import study_base

__all__ = [
    "burst_size",
    "burst_trials",
    "is_structural",
    "is_trial",
    "next_move_kind",
    "pending_burst",
    "stalled",
]

#: Fewest trials in a burst: TPE's random start alone is four.
MIN_BURST = 4


def is_trial(node: NodeSummary) -> bool:
    """A tuning trial (a ``promote`` re-run of one is the same trial, not another)."""
    return node.tuning is not None and node.move_id not in (PROMOTE, SCREEN_REFERENCE)


def is_structural(node: NodeSummary) -> bool:
    """An agent's change to the code: a draft or improvement, not a trial, a repair or a
    core re-run."""
    return (
        node.kind in (NodeKind.DRAFT, NodeKind.IMPROVE)
        and node.repair_of is None
        and node.tuning is None
        and node.move_id not in (TUNE, PROMOTE, SCREEN_REFERENCE)
    )


def burst_size(params: list[TunableParam]) -> int:
    """Trials in a burst by default: one per declared parameter, at least :data:`MIN_BURST`."""
    return max(MIN_BURST, len(params))


def burst_trials(context: AgentContext) -> list[NodeSummary]:
    """The burst in progress on the parent's study: its trailing trials, oldest first."""
    base = study_base(context)
    run: list[NodeSummary] = []
    for node in reversed(context.tree):
        if is_trial(node):
            if node.tuning.base != base:  # type: ignore[union-attr]
                break
            run.append(node)
        elif is_structural(node) and node.status != "running":
            break
    return run[::-1]


def stalled(context: AgentContext, stall: int = 2) -> bool:
    """Whether the last ``stall`` finished structural nodes since the latest tuning trial
    are all unaccepted (fewer than ``stall`` of them: not stalled)."""
    recent: list[NodeSummary] = []
    for node in reversed(context.tree):
        if is_trial(node) or len(recent) == stall:
            break
        if is_structural(node) and node.status != "running":
            recent.append(node)
    return len(recent) == stall and not any(_accepted(n, context.tree) for n in recent)


def next_move_kind(
    context: AgentContext,
    *,
    structural_available: bool,
    burst: int | None = None,
    stall: int = 2,
) -> Literal["tune", "structural"]:
    """Whether the next move on ``context.parent`` is a tuning trial or a structural move.

    - ``structural`` when the parent declares no tunable parameter (or its declarations
      cannot be read), ``tune`` when no structural move applies (``structural_available``);
    - inside a burst: ``tune`` until it holds ``burst`` trials (default: the size its
      first trial recorded, else :func:`burst_size` of the parent's parameters), then
      ``structural`` on top of the tuned parent;
    - otherwise ``tune`` (a new burst) once the search has :func:`stalled` over ``stall``
      structural nodes, ``structural`` before that: structural moves come first.
    """
    try:
        params = declared_params(context.parent_source)
    except TunableSpecError:
        params = []
    if not params:
        return "structural"
    if not structural_available:
        return "tune"
    run = burst_trials(context)
    if run:
        size = burst or run[0].tuning.burst or burst_size(params)  # type: ignore[union-attr]
        return "tune" if len(run) < size else "structural"
    return "tune" if stalled(context, stall) else "structural"


def pending_burst(context: AgentContext) -> int:
    """Trials still owed to the latest burst an agent asked for on the parent's study.

    The burst's first trial records its size (``TuningTrial.burst = N``); every trial of
    the study from that one on (running ones included, other nodes in between allowed)
    counts toward it. 0 when no burst was asked for or it is complete.
    """
    base = study_base(context)
    trials = [n for n in context.tree if is_trial(n) and n.tuning.base == base]  # type: ignore[union-attr]
    start = next(
        (i for i in range(len(trials) - 1, -1, -1) if trials[i].tuning.burst),  # type: ignore[union-attr]
        None,
    )
    if start is None:
        return 0
    size = trials[start].tuning.burst or 0  # type: ignore[union-attr]
    return max(0, size - (len(trials) - start))


def _accepted(node: NodeSummary, tree: list[NodeSummary]) -> bool:
    """Accepted itself, or through its promotion or a repair of it (the same change)."""
    if node.accepted:
        return True
    return any(
        _accepted(child, tree)
        for child in tree
        if child.parent_id == node.id and (child.move_id == PROMOTE or child.repair_of == node.id)
    )
