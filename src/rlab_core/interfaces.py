"""The runtime contracts of the four extension points.

Each kind is an abstract base class, generic over its options model: an implementation
declares ``class MyBenchmark(Benchmark[MyOptions])`` and receives its validated options as
``self.config`` (typed, no cast). Docstrings are the reference, including the exceptions a
method may raise. The records they exchange live in :mod:`rlab_core.records`,
:mod:`rlab_core.task_records` and :mod:`rlab_core.agent_context`.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from rlab_core.agent_context import AgentContext, BudgetProgress, RepairContext
from rlab_core.records import Execution, Proposal, Score
from rlab_core.task_records import (
    AuditPattern,
    CandidateLimits,
    PlaybookMove,
    SandboxRequest,
    SeedCandidate,
    TaskListing,
)
from rlab_core.tree import Tree

if TYPE_CHECKING:
    from rlab_core.resampling import Resampling

Split = Literal["val", "test"]
#: The options model of an implementation.
C = TypeVar("C", bound=BaseModel)


# --------------------------------------------------------------------------- benchmarks


class Benchmark(ABC, Generic[C]):
    """A family of tasks.

    Construction must be cheap and import nothing heavy; do heavy imports in ``prepare``.
    """

    def __init__(self, config: C) -> None:
        self.config = config

    @abstractmethod
    def list_tasks(self) -> list[TaskListing]:
        """Return every task this benchmark knows, with whether it is available offline."""

    @abstractmethod
    def prepare(self, task: str, cache_root: Path, *, rebuild_cache: bool = False) -> PreparedTask:
        """Make ``task`` (the part after ``BENCHMARK:``) ready on disk and return it.

        ``cache_root`` is a per-benchmark folder under the user's rlab cache. Raises
        :class:`~rlab_core.errors.UnknownNameError` for a task that does not exist (the
        message lists what does) and :class:`~rlab_core.errors.DataUnavailableError` when
        data is missing and cannot be fetched (the message says what to get and where).
        """


class PreparedTask(ABC):
    """One task made ready for a run: sanitized data, private labels, metric, seeds.

    The candidate sees only :attr:`data_dir` (read-only). Everything listed by
    :meth:`hidden_paths` is made invisible by sandboxes that can do so, and flagged by the
    audit if a candidate's code names it.
    """

    #: Full task name, ``BENCHMARK:TASK``.
    name: str
    #: Sanitized, read-only data the candidate reads through ``RLAB_DATA_DIR``.
    data_dir: Path
    #: Name of the primary metric, and its direction.
    primary_metric: str
    higher_is_better: bool = True
    #: Glob patterns of files a candidate may change or create.
    editable_files: Sequence[str] = ("*.py",)
    #: Glob patterns of output files that hold test-side predictions; they are moved to the
    #: run's private folder right after the candidate exits and never reach an agent.
    private_outputs: Sequence[str] = ()
    #: Run ``python main.py --debug`` first and fail fast when it fails.
    smoke_run: bool = False
    #: Extra tokens a child may not introduce unless its parent had them.
    forbidden_tokens: Sequence[str] = ()
    limits: CandidateLimits = CandidateLimits()

    @abstractmethod
    def context(self) -> str:
        """The problem as an agent should read it (markdown): data, metric, rules."""

    @abstractmethod
    def seed_candidates(self) -> list[SeedCandidate]:
        """Runnable starting programs, best first. At least one."""

    @abstractmethod
    def score(self, output_dir: Path, split: Split) -> Score:
        """Score the prediction files in ``output_dir`` with the official metric.

        ``split="val"`` is called by the loop for every node; ``split="test"`` only by
        ``rlab final`` for the node validation chose, with the node's private output folder.
        Raises :class:`~rlab_core.errors.ContractError` (one sentence per problem) when the
        predictions break the contract.
        """

    def validate_outputs(self, output_dir: Path, split: Split = "val") -> list[str]:
        """Return the contract problems of the outputs (empty when they are fine)."""
        return []

    def resampling(self, output_dir: Path, split: Split = "val") -> Resampling | None:
        """The primary metric of the predictions in ``output_dir`` on bootstrap resamples.

        Called after :meth:`score` succeeded on the same folder. Group the split's rows
        into the task's natural unit (users for per-user metrics, entities for rows that
        repeat an entity over time, rows — stratified by class — for independent rows) and
        return a :class:`~rlab_core.resampling.Resampling` whose statistic computes the
        primary metric from a matrix of unit draw counts; the helpers in
        :mod:`rlab_core.resampling` give weighted means and AUROC. With every count 1 it
        must equal the score's primary. The core draws the same resamples for every node,
        so two nodes' differences are paired: that is how a gain is told from noise.

        ``None`` (the default) offers no resampling: the run then accepts any gain, as
        before, and says so once.
        """
        return None

    def playbook(self) -> list[PlaybookMove]:
        """Prepared moves for the offline playbook agent (none by default)."""
        return []

    def hidden_paths(self) -> list[Path]:
        """Paths a candidate must never see: raw sources, private labels, caches."""
        return []

    def audit_patterns(self) -> list[AuditPattern]:
        """Task-specific patterns for the final audit, on top of the core's."""
        return []

    def write_submission(self, output_dir: Path, private_dir: Path, dest: Path) -> Path | None:
        """Write the benchmark's submission file for the winner into ``dest``; return it."""
        return None

    def describe(self) -> dict[str, Any]:
        """Facts recorded in ``run.json`` (sizes, versions, cutoffs)."""
        return {}

    def stage_for(self, progress: BudgetProgress) -> str:
        """The stage the next candidate runs in (``RLAB_STAGE``): ``full`` by default.

        Tasks that scale their work with the budget return ``mini`` (subsampled data),
        ``full`` or ``ensemble`` (combine the best nodes' cached predictions);
        :func:`rlab_core.budget.stage_by_progress` gives the standard thresholds. The agent
        is told the stage, and at ``ensemble`` the candidate gets ``RLAB_TOP_NODES``.
        """
        return "full"

    def reference_baselines(self) -> dict[str, float]:
        """Published or official reference scores of the primary metric, by name.

        Shown by the dashboard as bars to compare with, never used as a target or to steer.
        """
        return {}


# --------------------------------------------------------------------------- agents


class Agent(ABC, Generic[C]):
    """Proposes one hypothesis and its edits for a parent, and repairs failed nodes.

    With ``--workers N`` the loop keeps up to N candidates running. An agent whose
    ``concurrent_calls`` is true is called from several worker threads at once (its
    contexts show other in-flight nodes once their proposals exist); otherwise calls are
    serialized and proposals are made one at a time, each seeing every earlier one.
    """

    #: True when ``propose`` and ``repair`` may run in several threads at once.
    concurrent_calls: bool = False

    def __init__(self, config: C) -> None:
        self.config = config

    @abstractmethod
    def propose(self, context: AgentContext) -> Proposal:
        """Return one hypothesis and the edits that carry it out.

        Raises :class:`~rlab_core.errors.AgentError` when no usable proposal could be made
        (the node fails and the run goes on), or :class:`~rlab_core.errors.AgentAuthError`
        when credentials are refused (the run stops with that message).
        """

    def repair(self, context: RepairContext) -> Proposal | None:
        """Return a fix for the failed node, or ``None`` when this agent cannot repair."""
        return None

    def has_untried_moves(self, context: AgentContext) -> bool | None:
        """Whether changes of the code this agent has not tried yet remain for the parent.

        Asked when the convergence rule would stop the run: a run does not converge while
        the agent still has untried kinds of move for the best node (and budget remains).
        ``None`` (the default): the agent cannot tell, and convergence stops the run as usual.
        """
        return None

    def close(self) -> None:
        """Release clients and servers."""


# --------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class Step:
    """One unit of work a strategy hands out: expand ``parent_id`` as ``kind``."""

    parent_id: str
    kind: Literal["draft", "improve"] = "improve"


@dataclass(frozen=True)
class StopRules:
    """Run-level stop rules every strategy honours."""

    epsilon: float = 0.002
    window: int = 3
    min_iterations: int = 3
    target_val: float | None = None
    #: ``significant``: a gain counts when the paired bootstrap's one-sided lower bound at
    #: ``confidence`` is above zero; ``any``: every point gain counts (the rule before noise).
    acceptance: Literal["significant", "any"] = "significant"
    confidence: float = 0.9


@dataclass
class StrategyState:
    """What a strategy is told each time it is asked.

    ``tree`` holds the finished nodes this decision may see (see
    :mod:`rlab_core.scheduling`).
    """

    tree: Tree
    progress: BudgetProgress
    rules: StopRules
    rng: random.Random
    #: Parents the agent has nothing left for.
    exhausted: frozenset[str] = frozenset()
    #: Parent id -> children of it still being evaluated.
    running: dict[str, int] = field(default_factory=dict)
    #: Drafts still being evaluated.
    running_drafts: int = 0


class Strategy(ABC, Generic[C]):
    """Chooses which nodes to expand and decides when further search no longer pays.

    Failed and ``recovered_failure`` nodes must never be returned as parents. Budgets are
    enforced by the loop; a strategy adds its own stop reasons (convergence, target).
    """

    def __init__(self, config: C) -> None:
        self.config = config

    @abstractmethod
    def next_steps(self, state: StrategyState, capacity: int = 1) -> list[Step]:
        """Return up to ``capacity`` steps; an empty list means nothing is left to expand."""

    @abstractmethod
    def stop_reason(self, state: StrategyState) -> str | None:
        """Return why the search should stop now, or ``None`` to go on."""


# --------------------------------------------------------------------------- sandboxes


class Sandbox(ABC, Generic[C]):
    """Runs a candidate with limits and isolation and reports what happened.

    ``run`` never raises for a candidate's own faults (crash, timeout, memory, output
    flood): those are recorded in the :class:`~rlab_core.records.Execution`. It raises
    :class:`~rlab_core.errors.SandboxUnavailableError` only when the sandbox itself cannot
    work here.
    """

    def __init__(self, config: C) -> None:
        self.config = config

    @abstractmethod
    def isolation_level(self) -> str:
        """A short name for the isolation in effect, e.g. ``bubblewrap``, ``netns``, ``none``."""

    def isolation_details(self) -> dict[str, Any]:
        """Facts about the isolation recorded in ``run.json``."""
        return {"level": self.isolation_level()}

    @abstractmethod
    def run(self, request: SandboxRequest) -> Execution:
        """Run ``request.command`` in ``request.workdir`` and return what happened.

        Must be safe to call from several threads at once (``--workers N``).
        """

    def cancel(self) -> None:
        """Stop every candidate this sandbox is running now, from any thread.

        Called when a run is interrupted; the pending ``run`` calls return promptly with
        the candidate recorded as killed. Sandboxes that cannot cancel may ignore it.
        """

    def close(self) -> None:
        """Release containers, clusters or other resources."""
