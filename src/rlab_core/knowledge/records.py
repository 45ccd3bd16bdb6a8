"""Records of the knowledge base: task fingerprints, lessons from runs, curated pages, hits.

A :class:`Lesson` is what one finished node taught: the move or hypothesis, the diff, the
gain over its parent with the paired-bootstrap verdict, or the failure and its cause. A
:class:`KnowledgePage` is curated text a plugin ships for its task family. A search returns
:class:`KnowledgeHit` s, each carrying the lesson or page it found.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import Field

from rlab_core.records import Record

#: The longest diff a lesson keeps; a lesson is a reminder, the run folder keeps the rest.
DIFF_LIMIT = 4096


def _closeness(a: int | None, b: int | None) -> float | None:
    """1.0 for equal sizes, falling to 0 at three orders of magnitude apart; None if unknown."""
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return max(0.0, 1.0 - abs(math.log10(a) - math.log10(b)) / 3.0)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]+", text.lower()))


class TaskFingerprint(Record):
    """What a task is, in the terms that make lessons transfer: family, type, metric, size."""

    benchmark: str = Field(description="The benchmark plugin's name, e.g. 'relbench'.")
    task: str = Field(description="Full task name, BENCHMARK:TASK.")
    family: str = Field(description="Task family (the benchmark name: relbench, mle, toy...).")
    task_type: str = Field(default="", description="e.g. binary_classification, regression.")
    metric: str = Field(default="", description="The primary validation metric.")
    higher_is_better: bool = True
    rows: int | None = Field(default=None, description="Rows of the main table, if known.")
    columns: int | None = Field(default=None, description="Columns of the main table, if known.")
    keys: str = Field(
        default="",
        description="Key structure in words, e.g. 'entity planes; fkeys flights->planes'.",
    )

    def similarity(self, other: TaskFingerprint) -> float:
        """How alike two tasks are, in [0, 1]: 1.0 for the same task.

        Family counts most, then task type and metric; closeness of size and shared key
        words count a little. Two different tasks never reach 1.0.
        """
        if self.task == other.task:
            return 1.0
        score = 0.0
        score += 0.4 if self.family == other.family else 0.0
        score += 0.2 if self.task_type and self.task_type == other.task_type else 0.0
        same_metric = self.metric and self.metric == other.metric
        score += 0.2 if same_metric and self.higher_is_better == other.higher_is_better else 0.0
        sizes = [
            c
            for c in (_closeness(self.rows, other.rows), _closeness(self.columns, other.columns))
            if c is not None
        ]
        score += 0.1 * (sum(sizes) / len(sizes)) if sizes else 0.0
        mine, theirs = _words(self.keys), _words(other.keys)
        if mine and theirs:
            score += 0.05 * len(mine & theirs) / len(mine | theirs)
        return round(min(score, 0.95), 6)


class Lesson(Record):
    """What one finished node taught: its change, and whether it held up or how it failed.

    ``gain`` is child minus parent in the metric's better direction (positive means better);
    ``verdict`` and ``interval`` come from the paired bootstrap where the benchmark offers
    one. ``val_test_gap`` is set only after ``rlab final``, for the node validation chose,
    and is never shown to an agent.
    """

    run_id: str
    node_id: str
    parent_id: str | None = None
    recorded_at: float = Field(description="Unix time the lesson was recorded.")
    fingerprint: TaskFingerprint
    move_id: str | None = None
    hypothesis: str = ""
    diff: str = Field(default="", description=f"The node's diff, cut at {DIFF_LIMIT} characters.")
    status: str = Field(description="evaluated, failed or recovered_failure.")
    node_kind: str = Field(default="", description="seed, draft, improve or debug.")
    val_score: float | None = Field(default=None, description="Primary validation score.")
    verdict: Literal["better", "within noise", "worse"] | None = None
    gain: float | None = None
    interval: tuple[float | None, float | None] | None = Field(
        default=None, description="Bounds of the gain from the paired bootstrap."
    )
    failure_cause: str | None = Field(default=None, description="'stage: message' of a failure.")
    repair_of: str | None = None
    val_test_gap: float | None = Field(
        default=None, description="Validation minus test score of the chosen node, after final."
    )

    @property
    def title(self) -> str:
        """A one-line name for listings: the hypothesis's first line, else the move."""
        first_line = self.hypothesis.strip().splitlines()[0] if self.hypothesis.strip() else ""
        return first_line or self.move_id or f"{self.run_id}/{self.node_id}"


class KnowledgePage(Record):
    """A curated page a plugin ships for its task family: concept, workflow, pitfall, snippet."""

    id: str = Field(description="Stable slug, e.g. 'relbench/time-censoring'.")
    family: str
    title: str
    body: str = Field(description="Markdown.")
    tags: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list, description="URLs or citations.")


class KnowledgeHit(Record):
    """One search result: a lesson or a page, with a short text and its relevance score."""

    kind: Literal["lesson", "page"]
    title: str
    text: str = Field(description="A short excerpt.")
    score: float = Field(description="Relevance, higher is better (negated bm25).")
    lesson: Lesson | None = None
    page: KnowledgePage | None = None
