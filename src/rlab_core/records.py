"""Records of one node: what was proposed, what ran, how it scored.

rlab's words as data: an
:class:`Edit`, a :class:`Proposal` (hypothesis plus edits), the :class:`Execution` record a
sandbox returns, the :class:`Score` a benchmark computes and the :class:`Node` that ties
them together. Records of tasks and of what agents see live in
:mod:`rlab_core.task_records` and :mod:`rlab_core.agent_context`.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """Base for records: unknown fields are refused so typos surface at once."""

    model_config = ConfigDict(extra="forbid")


class Edit(Record):
    """Replace the one occurrence of ``anchor`` in ``file`` with ``replacement``."""

    file: str = Field(description="Path of the file, relative to the candidate folder.")
    anchor: str = Field(description="Text that must occur exactly once in the file.")
    replacement: str = Field(description="Text that takes the anchor's place.")


class Usage(Record):
    """What one agent call cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


#: Move ids the core reserves for its own nodes: a tuning trial (:mod:`rlab_core.tuning`),
#: a screen re-run unchanged at full fidelity, and a parent re-run at ``mini`` fidelity as
#: its screens' yardstick (:mod:`rlab_core.core_steps`).
TUNE = "tune"
PROMOTE = "promote"
SCREEN_REFERENCE = "screen-reference"


class TuningTrial(Record):
    """One trial of a tuning study: a TPE-sampled setting of a candidate's declared parameters.

    The study is never stored on its own: it is rebuilt from the journal's nodes (those with
    the same ``base``), so a resumed run or a second worker continues it without repeating a
    setting (:mod:`rlab_core.tuning`).
    """

    base: str = Field(
        description="The node whose declared parameters the study tunes: the nearest node of "
        "the lineage that is not itself a tuning trial (a structural node or a seed)."
    )
    number: int = Field(ge=1, description="The trial's number within its study, from 1.")
    params: dict[str, Any] = Field(
        description="The whole setting the trial runs: every declared parameter's value."
    )
    burst: int | None = Field(
        default=None,
        description="How many trials an agent asked for in the tuning burst this trial starts.",
    )


class Proposal(Record):
    """An agent's answer: one hypothesis and the change that carries it out.

    Give either ``edits`` (anchored, preferred) or ``files`` (whole new file contents, for
    agents that rewrite files); the core computes the diff either way and enforces the same
    edit boundary.
    """

    hypothesis: str = Field(description="One sentence: what the change should do and why.")
    rationale: str = Field(default="", description="Longer reasoning, optional.")
    edits: list[Edit] = Field(default_factory=list)
    files: dict[str, str] | None = Field(
        default=None, description="Whole-file rewrites: relative path -> new content."
    )
    move_id: str | None = Field(default=None, description="Playbook move this came from, if any.")
    tuning: TuningTrial | None = Field(
        default=None, description="The tuning trial this proposal runs, if it is one."
    )
    usage: Usage = Field(default_factory=Usage)


class NodeKind(StrEnum):
    """Why a node exists."""

    SEED = "seed"
    DRAFT = "draft"
    IMPROVE = "improve"
    DEBUG = "debug"


class NodeStatus(StrEnum):
    """Where a node stands.

    ``evaluated``: ran and was scored on validation. ``failed``: did not produce a valid
    score (edit refused, guard refusal, crash, timeout, contract breach); repairs may follow.
    ``recovered_failure``: a failed branch whose repair attempts also failed; never a parent.
    """

    EVALUATED = "evaluated"
    FAILED = "failed"
    RECOVERED_FAILURE = "recovered_failure"


class FailureStage(StrEnum):
    """Which step of an iteration failed."""

    AGENT = "agent"
    EDIT = "edit"
    GUARD = "guard"
    SANDBOX = "sandbox"
    SMOKE = "smoke"
    RUN = "run"
    CONTRACT = "contract"
    SCORE = "score"


class Failure(Record):
    """Why a node failed, in words an agent can act on."""

    stage: FailureStage
    message: str
    log_tail: str = ""


class Execution(Record):
    """What a sandbox observed while a candidate ran."""

    command: list[str]
    exit_code: int | None = Field(description="Process exit code; None if it was killed.")
    wall_s: float
    cpu_s: float = 0.0
    peak_memory_mb: float = 0.0
    timed_out: bool = False
    killed_by: Literal["timeout", "memory", "output", "disk", "signal", "cancelled"] | None = None
    log_tail: str = ""
    log_bytes: int = 0
    start_overhead_s: float = Field(default=0.0, description="Sandbox setup before the candidate.")
    isolation: str = "none"
    output_problem: str | None = Field(
        default=None,
        description="Why the sandbox could not hand the outputs back as data (a link, a fifo, "
        "too large); the node then fails at the contract stage with this sentence.",
    )

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.killed_by is None


Fidelity = Literal["mini", "full"]


def fidelity_of(stage: str) -> Fidelity:
    """The fidelity of a score from the ``RLAB_STAGE`` it was made in: ``mini`` screens."""
    return "mini" if stage == "mini" else "full"


class Score(Record):
    """Official validation metrics of one node and the primary score that steers the search."""

    metrics: dict[str, float]
    primary: float
    primary_metric: str
    higher_is_better: bool = True
    details: dict[str, Any] = Field(
        default_factory=dict,
        description="Benchmark-specific facts of this scoring (e.g. a test grading report with "
        "medals); written to final_report.json as test_details, never used to steer.",
    )
    standard_error: float | None = Field(
        default=None,
        description="Bootstrap standard error of the primary score over the task's natural "
        "units (set by the core when the benchmark offers resampling).",
    )
    resample_unit: str | None = Field(
        default=None, description="What the bootstrap drew: users, planes, rows..."
    )
    fidelity: Fidelity = Field(
        default="full",
        description="``mini``: a screening run on a subsample or fewer rounds (RLAB_STAGE=mini); "
        "only ``full`` scores compete for the run's best.",
    )

    def better_than(self, other: Score | None, margin: float = 0.0) -> bool:
        """True when this score beats ``other`` by more than ``margin`` in metric units."""
        if other is None:
            return not math.isnan(self.primary)
        if self.higher_is_better:
            return self.primary > other.primary + margin
        return self.primary < other.primary - margin


class Gain(Record):
    """A node's validation score against another node's, with the paired bootstrap's verdict.

    ``delta`` is the point gain, positive meaning better whatever the metric's direction;
    ``low`` and ``high`` are the one-sided bounds at ``level`` from the paired bootstrap
    over the same validation units (``None`` when the benchmark offers no resampling),
    widened by the run's training-seed noise (``seed_sd``) where it was measured: each of the
    two scores carries one training seed's luck, so the difference gets ``√2 · seed_sd``.
    """

    against: str = Field(description="The node compared with.")
    delta: float
    low: float | None = None
    high: float | None = None
    level: float = 0.9
    verdict: Literal["better", "within noise", "worse", "unmeasured"] = "unmeasured"
    seed_sd: float | None = Field(
        default=None,
        description="The training-seed noise (SD of one score) counted in the bounds, if any.",
    )

    @property
    def significant(self) -> bool:
        return self.verdict == "better"


class Timing(Record):
    """Seconds spent in each part of one iteration."""

    agent_s: float = 0.0
    edit_s: float = 0.0
    sandbox_start_s: float = 0.0
    candidate_s: float = 0.0
    scoring_s: float = 0.0
    bookkeeping_s: float = 0.0

    @property
    def total_s(self) -> float:
        return (
            self.agent_s
            + self.edit_s
            + self.sandbox_start_s
            + self.candidate_s
            + self.scoring_s
            + self.bookkeeping_s
        )

    @property
    def overhead_s(self) -> float:
        """Everything but the candidate's own work (and the agent's thinking)."""
        return self.edit_s + self.sandbox_start_s + self.scoring_s + self.bookkeeping_s


class Node(Record):
    """One candidate in the search tree with its evidence."""

    id: str
    parent_id: str | None
    iteration: int = Field(description="0 for seeds; 1, 2, ... for agent-made nodes.")
    kind: NodeKind
    status: NodeStatus
    hypothesis: str
    rationale: str = ""
    move_id: str | None = None
    edits: list[Edit] = Field(default_factory=list)
    diff: str = ""
    changed_files: list[str] = Field(default_factory=list)
    execution: Execution | None = None
    score: Score | None = None
    failure: Failure | None = None
    repair_of: str | None = Field(default=None, description="The failed node this one repairs.")
    tuning: TuningTrial | None = Field(
        default=None, description="The tuning trial this node ran, if it is one."
    )
    tunables: list[str] = Field(
        default_factory=list,
        description="Names of the tunable parameters its source declares (rlab_core.tuning).",
    )
    stage: str = Field(default="full", description="RLAB_STAGE the candidate ran in.")
    top_nodes: list[str] = Field(
        default_factory=list, description="RLAB_TOP_NODES it was given (ensemble stage)."
    )
    gain: Gain | None = Field(
        default=None, description="Against the nearest evaluated ancestor (its parent)."
    )
    versus_best: Gain | None = Field(
        default=None,
        description="Against the best of its lineage (its nearest accepted ancestor), where "
        "that is not its parent.",
    )
    accepted: bool | None = Field(
        default=None,
        description="Beat the best of its lineage under the run's acceptance rule; seeds are "
        "accepted as baselines (None in records written before the rule existed).",
    )
    usage: Usage = Field(default_factory=Usage)
    timing: Timing = Field(default_factory=Timing)
    created_at: float = 0.0
    finished_at: float = 0.0

    @property
    def evaluated(self) -> bool:
        return self.status == NodeStatus.EVALUATED and self.score is not None

    @property
    def fidelity(self) -> Fidelity:
        """Its score's fidelity (the stage it ran in when it has no score)."""
        return self.score.fidelity if self.score is not None else fidelity_of(self.stage)

    @property
    def full_fidelity(self) -> bool:
        """Evaluated at full fidelity: may be the run's best and a parent of new moves."""
        return self.evaluated and self.fidelity == "full"
