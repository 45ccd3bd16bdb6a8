"""The few settings the research loop reads, as one small value the runner builds.

The loop never sees the whole run configuration: the stop rules, the budgets, how many
candidates run at once and in which order decisions see them, the repair attempts, the
seed and the user's own seed program are all it needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rlab_core.budget import Budgets
from rlab_core.finalists import FinalistSettings
from rlab_core.interfaces import PreparedTask, StopRules
from rlab_core.records import Proposal

if TYPE_CHECKING:
    from rlab_core.knowledge.run_knowledge import RunKnowledge

#: ``reproducible``: decisions see results in dispatch order; ``as-completed``: at once.
ParallelOrder = Literal["reproducible", "as-completed"]


@dataclass(frozen=True)
class LoopSettings:
    """What shapes one search, beyond its parts (task, agent, strategy, sandbox)."""

    rules: StopRules = field(default_factory=StopRules)
    budgets: Budgets = field(default_factory=Budgets)
    #: Candidates evaluated at once.
    workers: int = 1
    parallel_order: ParallelOrder = "reproducible"
    #: Repair attempts for a failed node.
    debug_tries: int = 1
    #: Seed of the strategy's random choices (and of what agents and candidates are told).
    seed: int = 0
    #: The user's own program to start from, instead of the task's seed candidates.
    seed_candidate: Path | None = None
    #: Seed replicates of the best few nodes before the run ends (none by default here;
    #: the run's configuration asks for them).
    finalists: FinalistSettings = field(default_factory=FinalistSettings)
    #: Other seeds the best seed runs with after the seeds, to measure training-seed noise
    #: (0: not measured; the paired verdicts then see only the validation rows' noise).
    noise_seeds: int = 0
    #: What agents are told of earlier runs (None: nothing, ``--no-kg``).
    knowledge: RunKnowledge | None = None


def seed_sources(settings: LoopSettings, task: PreparedTask) -> list[tuple[str, Path, str]]:
    """The programs a search starts from: the user's own, else the task's seed candidates."""
    if settings.seed_candidate is not None:
        path = Path(settings.seed_candidate)
        return [(path.name or "user-seed", path, "the user's own program")]
    return [(s.name, s.path, s.description) for s in task.seed_candidates()]


def seed_proposal(name: str, description: str) -> Proposal:
    """The proposal a seed node records: which seed program it is."""
    return Proposal(
        hypothesis=f"Seed candidate '{name}'" + (f": {description}" if description else ""),
        move_id=name,
    )
