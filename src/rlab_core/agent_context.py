"""What an agent sees: node summaries (never a test-side number), budget progress, the
knowledge of earlier runs, and the context of one proposal or repair."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlab_core.knowledge.retrieve import KnowledgeDigest
from rlab_core.records import NodeKind, Record, TuningTrial
from rlab_core.task_records import PlaybookMove


class NodeSummary(Record):
    """What an agent may know of one node: never a test-side number."""

    id: str
    parent_id: str | None
    kind: NodeKind
    status: str
    hypothesis: str
    move_id: str | None = None
    diff: str = ""
    primary: float | None = None
    #: Bootstrap standard error of ``primary`` over the task's natural units.
    standard_error: float | None = None
    #: The gain over its parent: ``better`` (beyond the noise), ``within noise``, ``worse``.
    verdict: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    improved_on_parent: bool = False
    failure: str | None = None
    repair_of: str | None = None
    #: The tuning trial it ran (its setting of the declared parameters), if any.
    tuning: TuningTrial | None = None
    #: ``mini`` for a screening run, ``full`` otherwise; only full scores compete for best.
    fidelity: str = "full"
    #: Whether the run's acceptance rule took it as a new best of its lineage.
    accepted: bool | None = None
    #: Tunable parameters its source declares.
    tunables: list[str] = Field(default_factory=list)


class BudgetProgress(Record):
    """How much of each budget a run has used."""

    iterations_used: int = 0
    iterations_max: int | None = None
    elapsed_s: float = 0.0
    time_budget_s: float | None = None
    tokens_used: int = 0
    max_tokens: int | None = None
    cost_used: float = 0.0
    max_cost: float | None = None

    @property
    def fraction(self) -> float:
        """The largest used share of any bounded budget, in [0, 1]."""
        shares = [0.0]
        if self.iterations_max:
            shares.append(self.iterations_used / self.iterations_max)
        if self.time_budget_s:
            shares.append(self.elapsed_s / self.time_budget_s)
        if self.max_tokens:
            shares.append(self.tokens_used / self.max_tokens)
        if self.max_cost:
            shares.append(self.cost_used / self.max_cost)
        return min(1.0, max(shares))

    @property
    def phase(self) -> str:
        """``explore`` early, ``improve`` in the middle, ``finalize`` near the end."""
        f = self.fraction
        return "explore" if f < 1 / 3 else "improve" if f < 0.75 else "finalize"


class AgentContext(Record):
    """Everything an agent sees when asked for one hypothesis."""

    task: str
    problem: str
    primary_metric: str
    higher_is_better: bool
    parent: NodeSummary
    parent_source: dict[str, str]
    tree: list[NodeSummary] = Field(description="Every node so far, oldest first.")
    progress: BudgetProgress
    editable_files: list[str]
    playbook: list[PlaybookMove] = Field(default_factory=list)
    seed: int = 0
    step: Literal["draft", "improve"] = "improve"
    stage: str = Field(default="full", description="RLAB_STAGE the child will run in.")
    knowledge: KnowledgeDigest | None = Field(
        default=None,
        description="What earlier runs on similar tasks taught (None: knowledge switched off).",
    )


class RepairContext(AgentContext):
    """An :class:`AgentContext` for repairing ``failed`` (the parent is the failed node)."""

    original_hypothesis: str
    error: str
    log_tail: str = ""
    attempt: int = 1
