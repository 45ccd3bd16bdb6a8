"""A tuning study rebuilt from the tree, and the proposal of its next trial (Optuna's TPE).

A study tunes the parameters one node declares (its *base*: a seed or a structural node).
Its trials are ordinary nodes whose :class:`~rlab_core.records.TuningTrial` names that
base; nothing else is stored. Every call rebuilds an in-memory Optuna study from the tree
the agent sees, so a resumed run continues where it stopped and a second worker sees the
first one's running trial:

- the base's own setting, with its score, is the first completed trial (a study starts
  from the values the code has now);
- a trial evaluated at full fidelity is ``COMPLETE`` with its primary score (a screen's
  ``promote`` re-run carries the same trial, so the promoted score is the trial's);
- a running trial, and a screen scored only at ``mini`` fidelity, is ``RUNNING``: with
  ``constant_liar`` TPE counts it among the poor settings until a full score exists, and
  never proposes it again (a mini score is never mixed in as a full one);
- a failed trial is ``FAIL``: TPE ignores it, but its setting is not proposed again;
- a trial whose setting no longer fits the declarations is left out.

The sampler's seed comes from the run's seed, the base and the tree's length: the same
tree gives the same proposal (resume), two decisions never share a seed (parallel).
Optuna is imported inside the functions that use it, so the command line stays light.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import math
import random
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlab_core.agent_context import AgentContext, NodeSummary
from rlab_core.errors import NothingToPropose
from rlab_core.records import PROMOTE, SCREEN_REFERENCE, TUNE, Proposal, TuningTrial
from rlab_core.tuning.space import (
    TunableParam,
    TunableSpecError,
    declared_params,
    format_value,
    setting_edits,
)

if TYPE_CHECKING:
    import optuna

__all__ = [
    "PROMOTE",
    "SCREEN_REFERENCE",
    "TUNE",
    "TuningStudy",
    "rebuild_study",
    "study_base",
    "study_trials",
    "tuning_proposal",
]

#: Samples drawn before a study counts as exhausted (the first ones from TPE, then random).
REDRAWS = 20
#: Of those, the ones asked of TPE; its next candidates cluster where the last one was.
TPE_REDRAWS = 5
#: A space of ints and choices this small is enumerated to tell exhaustion for certain.
ENUMERABLE = 100_000

Setting = tuple[str, ...]


def study_base(context: AgentContext) -> str:
    """The node whose parameters a trial on ``context.parent`` tunes: the parent's own
    study's base when the parent is itself a trial, else the parent."""
    parent = context.parent
    return parent.tuning.base if parent.tuning is not None else parent.id


def study_trials(context: AgentContext, base: str) -> list[NodeSummary]:
    """The tree's nodes (running ones too) that ran a trial of ``base``'s study, oldest first.

    A ``promote`` re-run carries the trial of the screen it promotes, so one trial number
    may appear twice (at mini, then at full fidelity).
    """
    return [n for n in context.tree if n.tuning is not None and n.tuning.base == base]


@dataclass
class TuningStudy:
    """A study as rebuilt from the tree: the Optuna study and what it was built from."""

    base: str
    params: list[TunableParam]
    study: optuna.Study
    distributions: dict[str, optuna.distributions.BaseDistribution]
    #: Settings (as the source writes them) that must not be proposed again.
    known: set[Setting] = field(default_factory=set)
    #: Trial numbers in use (running, failed and left-out trials included).
    numbers: set[int] = field(default_factory=set)
    #: (label, primary) of each completed trial, the base's as ``"the base n0003"``.
    completed: list[tuple[str, float]] = field(default_factory=list)
    running: int = 0
    failed: int = 0
    left_out: int = 0

    def key(self, values: dict[str, Any]) -> Setting:
        """A setting as the source would write it, for telling repeats."""
        return tuple(format_value(p, values[p.name]) for p in self.params)


def rebuild_study(context: AgentContext, params: list[TunableParam] | None = None) -> TuningStudy:
    """The study of ``study_base(context)`` over the parent's declared parameters.

    ``params``: the parent's declarations when already read. Raises
    :class:`~rlab_core.errors.NothingToPropose` when the parent declares nothing or its
    declarations cannot be read.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if params is None:
        params = parent_params(context)
    base = study_base(context)
    with warnings.catch_warnings():
        # multivariate TPE and the constant liar are marked experimental; a run says nothing
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(
            seed=_seed(context, base),
            n_startup_trials=startup_trials(len(params)),
            constant_liar=True,
            multivariate=True,
        )
    direction = "maximize" if context.higher_is_better else "minimize"
    built = TuningStudy(
        base=base,
        params=params,
        study=optuna.create_study(direction=direction, sampler=sampler),
        distributions={p.name: _distribution(p) for p in params},
    )
    by_id = {n.id: n for n in context.tree}
    setting = _base_setting(context, params, base, by_id)
    base_score = _full_score(by_id[base]) if base in by_id else None
    if setting is not None:
        built.known.add(built.key(setting))
        if base_score is not None:
            built.completed.append((f"the base {base}", base_score))
            _add(built, setting, base_score)
    # the parent's own values: a trial that changes nothing repeats it
    built.known.add(built.key({p.name: p.current for p in params}))
    for number, nodes in _trials_by_number(context.tree, base).items():
        built.numbers.add(number)
        values = nodes[0].tuning.params  # type: ignore[union-attr]
        if not _fits(params, values):
            built.left_out += 1  # declared differently now: not a point of this space
            continue
        built.known.add(built.key(values))
        full = next((n for n in nodes if _full_score(n) is not None), None)
        if full is not None:  # a promotion's full score is its screen's trial's
            score = _full_score(full)
            built.completed.append((f"trial {number} ({full.id})", score))  # type: ignore[arg-type]
            _add(built, values, score)
        elif any(n.status == "running" for n in nodes) or not any(_failed(n) for n in nodes):
            built.running += 1  # running, or scored at mini fidelity only: a pending point
            _add(built, values, None)
        else:
            built.failed += 1
            _add(built, values, None, failed=True)
    return built


def tuning_proposal(context: AgentContext, *, burst: int | None = None) -> Proposal:
    """The next trial of the parent's study: a TPE-sampled setting never tried before.

    ``burst``: the number of trials an agent asked for, recorded on the burst's first
    trial (:func:`rlab_core.tuning.policy.pending_burst` counts the rest). Raises
    :class:`~rlab_core.errors.NothingToPropose` when the parent declares nothing, its
    declarations cannot be read, or every sample repeats a known setting.
    """
    built = rebuild_study(context)
    values = _new_setting(built, context)
    params = built.params
    number = max(built.numbers, default=0) + 1
    parent_values = {p.name: p.current for p in params}
    changes = [
        f"{p.name} {format_value(p, parent_values[p.name])} -> {format_value(p, values[p.name])}"
        for p in params
        if format_value(p, values[p.name]) != format_value(p, parent_values[p.name])
    ]
    count = f"{len(params)} declared parameter{'s' if len(params) != 1 else ''}"
    hypothesis = f"Tuning trial {number} on {built.base} (TPE over {count}): " + ", ".join(changes)
    return Proposal(
        hypothesis=hypothesis,
        rationale=_rationale(built, context, burst),
        edits=setting_edits(params, values),
        move_id=TUNE,
        tuning=TuningTrial(base=built.base, number=number, params=values, burst=burst),
    )


def parent_params(context: AgentContext) -> list[TunableParam]:
    """The parent's declared parameters; :class:`NothingToPropose` when there are none."""
    parent = context.parent.id
    try:
        params = declared_params(context.parent_source)
    except TunableSpecError as exc:
        raise NothingToPropose(
            f"{parent} cannot be tuned: its '# tune:' declarations cannot be read ({exc})"
        ) from None
    if not params:
        raise NothingToPropose(
            f"{parent} declares no tunable parameters (no '# tune:' comment in its source)"
        )
    return params


def startup_trials(declared: int) -> int:
    """Completed trials (the base's included) before TPE models the scores: one per
    declared parameter, at least 4, at most Optuna's default of 10; random before that."""
    return min(10, max(4, declared))


# ---------------------------------------------------------------------------- sampling


def _new_setting(built: TuningStudy, context: AgentContext) -> dict[str, Any]:
    """A setting not in ``built.known``, as the source will write it."""
    import optuna

    base, study = built.base, built.study
    total = _space_size(built.params)
    if total is not None and len(built.known) >= total:
        raise NothingToPropose(
            f"the tuning space of {base} is exhausted: all {total} settings of its "
            f"{len(built.params)} declared parameters were tried or are running"
        )
    for attempt in range(REDRAWS):
        if attempt == TPE_REDRAWS:
            # TPE keeps proposing near the repeated point; a fresh random stream does not
            study.sampler = optuna.samplers.RandomSampler(seed=_seed(context, base, "redraw"))
        trial = study.ask(built.distributions)
        values = {p.name: _written(p, trial.params[p.name]) for p in built.params}
        if built.key(values) not in built.known:
            return values
    if total is not None:  # a small discrete space: take an untried setting at random
        untried = [s for s in _enumerate(built.params) if built.key(s) not in built.known]
        return random.Random(_seed(context, base, "untried")).choice(untried)
    raise NothingToPropose(
        f"the tuning space of {base} is exhausted: {REDRAWS} samples in a row repeated a "
        f"setting already tried or running ({len(built.known)} known)"
    )


def _written(param: TunableParam, value: Any) -> Any:
    """``value`` as it reads back from the source once written (floats to 4 digits)."""
    return ast.literal_eval(format_value(param, value))


def _space_size(params: list[TunableParam]) -> int | None:
    """The number of settings of an all-int-and-choice space, when small enough to list."""
    if any(p.kind == "float" for p in params):
        return None
    size = math.prod(
        len(p.choices or []) if p.kind == "choice" else int(p.high) - int(p.low) + 1  # type: ignore[arg-type]
        for p in params
    )
    return size if size <= ENUMERABLE else None


def _enumerate(params: list[TunableParam]) -> Iterable[dict[str, Any]]:
    ranges = [
        p.choices if p.kind == "choice" else range(int(p.low), int(p.high) + 1)  # type: ignore[arg-type]
        for p in params
    ]
    for combo in itertools.product(*ranges):  # type: ignore[arg-type]
        yield {p.name: v for p, v in zip(params, combo, strict=True)}


def _seed(context: AgentContext, base: str, *salt: str) -> int:
    text = ":".join([str(context.seed), base, str(len(context.tree)), *salt])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


# ---------------------------------------------------------------------------- the trials


def _distribution(param: TunableParam) -> optuna.distributions.BaseDistribution:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if param.kind == "choice":
        return CategoricalDistribution(list(param.choices or []))
    assert param.low is not None and param.high is not None  # a range kind
    if param.kind == "int":
        return IntDistribution(int(param.low), int(param.high), log=param.log)
    return FloatDistribution(param.low, param.high, log=param.log)


def _fits(params: list[TunableParam], values: dict[str, Any]) -> bool:
    """Whether ``values`` sets exactly the declared parameters, each inside its range."""
    if set(values) != {p.name for p in params}:
        return False
    return all(_inside(p, values[p.name]) for p in params)


def _inside(param: TunableParam, value: Any) -> bool:
    if param.kind == "choice":
        return value in (param.choices or [])
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return param.low <= value <= param.high  # type: ignore[operator]


def _add(
    built: TuningStudy, values: dict[str, Any], score: float | None, failed: bool = False
) -> None:
    from optuna.trial import TrialState, create_trial

    state = TrialState.COMPLETE if score is not None else TrialState.RUNNING
    built.study.add_trial(
        create_trial(
            state=TrialState.FAIL if failed else state,
            value=score,
            params=dict(values),
            distributions=built.distributions,
        )
    )


def _trials_by_number(tree: list[NodeSummary], base: str) -> dict[int, list[NodeSummary]]:
    """The study's trials, each with its nodes (a screen and its promotion share a number)."""
    trials: dict[int, list[NodeSummary]] = {}
    for node in tree:
        if node.tuning is None or node.tuning.base != base or node.move_id == SCREEN_REFERENCE:
            continue
        trials.setdefault(node.tuning.number, []).append(node)
    return trials


def _full_score(node: NodeSummary) -> float | None:
    """The node's primary score when evaluated at full fidelity (a finite number)."""
    if node.status != "evaluated" or node.fidelity != "full" or node.primary is None:
        return None
    return node.primary if math.isfinite(node.primary) else None


def _failed(node: NodeSummary) -> bool:
    return node.status in ("failed", "recovered_failure") or (
        node.status == "evaluated" and _full_score(node) is None and node.fidelity == "full"
    )


def _base_setting(
    context: AgentContext,
    params: list[TunableParam],
    base: str,
    by_id: dict[str, NodeSummary],
) -> dict[str, Any] | None:
    """The base's values, read back from the parent's through the diffs between them.

    The parent is the base or a trial below it; each trial's diff replaces declaring lines
    only, so its removed lines hold the values its own parent had.
    """
    setting = {p.name: p.current for p in params}
    node: NodeSummary | None = context.parent
    while node is not None and node.id != base:
        for line in node.diff.splitlines():
            if not line.startswith("-") or line.startswith("---") or "# tune:" not in line:
                continue
            try:
                old = declared_params({"diff.py": line[1:]})
            except TunableSpecError:
                continue
            for param in old:
                if param.name in setting:
                    setting[param.name] = param.current
        node = by_id.get(node.parent_id) if node.parent_id else None
    if node is None or not _fits(params, setting):
        return None  # the lineage is not in the tree the agent sees
    return setting


def _rationale(built: TuningStudy, context: AgentContext, burst: int | None) -> str:
    parts = [
        f"Trial of the study of {built.base}'s declared parameters, rebuilt from the tree: "
        f"{len(built.completed)} completed (the base included), {built.running} running or "
        f"screened only, {built.failed} failed"
        + (f", {built.left_out} left out (declared differently now)" if built.left_out else "")
        + "."
    ]
    if built.completed:
        pick = max if context.higher_is_better else min
        label, score = pick(built.completed, key=lambda c: c[1])
        parts.append(f"Best so far: {label} with {context.primary_metric} {score:.6g}.")
    startup = startup_trials(len(built.params))
    if len(built.completed) < startup:
        parts.append(
            f"Random start: TPE models the scores once {startup} trials are complete "
            f"({len(built.completed)} now)."
        )
    if burst is not None:
        parts.append(f"First of a burst of {burst} trials.")
    return " ".join(parts)
