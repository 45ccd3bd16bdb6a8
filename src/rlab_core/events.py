"""The journal's events, one typed record per event type.

Every event is one line of ``journal.jsonl``: the journal adds ``seq``, ``t`` and ``type``
(the record's :attr:`Event.TYPE`), the record's fields are the rest. Observers and the live
view receive that line as a mapping, as the ``rlab_observe_event`` hook promises;
:func:`parse_event` turns one back into its record.

The records are strict when written (every field named, no unknown ones). Reading accepts
every line rlab has written: ``isolation_warning`` is absent before it existed, and a
``node_started`` line written for an agent that failed to propose carried only ``id``,
``parent_id`` and ``kind`` before ``node_started`` had one shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from rlab_core.records import Node, NodeKind

#: Keys the journal adds to every line; they are not part of an event's record.
ENVELOPE = ("seq", "t", "type")


class Event(BaseModel):
    """One journal event's record; :attr:`TYPE` is its ``type`` on disk."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    TYPE: ClassVar[str]

    def payload(self) -> dict[str, Any]:
        """The fields as the journal line holds them (JSON types only)."""
        return self.model_dump(mode="json")


class RunStarted(Event):
    """A new run: its task, metric and the isolation candidates run in."""

    TYPE: ClassVar[str] = "run_started"

    run_id: str
    task: str
    primary_metric: str
    higher_is_better: bool
    isolation: str
    #: Said when the isolation level does not hide private data (an explicit opt-in).
    isolation_warning: str | None = None
    #: Said when the benchmark cannot tell a gain from noise (any gain counts).
    acceptance_note: str | None = None


class RunResumed(Event):
    """A stopped or killed run continues; ``abandoned`` nodes were running when it stopped."""

    TYPE: ClassVar[str] = "run_resumed"

    nodes: int
    abandoned: list[str]
    torn_tail: bool
    isolation: str
    isolation_warning: str | None = None


class NodeStarted(Event):
    """A node got its id; its record follows in ``node_finished`` unless the run dies first.

    ``iteration`` and ``hypothesis`` are ``None`` only in lines written before this one
    shape (an agent failure's ``node_started`` lacked them).
    """

    TYPE: ClassVar[str] = "node_started"

    id: str
    parent_id: str | None
    kind: NodeKind
    iteration: int | None
    hypothesis: str | None


class NodeFinished(Event):
    """A node's complete record: evaluated, or failed with its cause."""

    TYPE: ClassVar[str] = "node_finished"

    node: Node


class NodeAbandoned(Event):
    """A node that was running when the run stopped, dropped on resume."""

    TYPE: ClassVar[str] = "node_abandoned"

    id: str
    reason: str


class BranchClosed(Event):
    """A failed node and its failed repairs: ``recovered_failure``, never a parent again."""

    TYPE: ClassVar[str] = "branch_closed"

    node_ids: list[str]
    reason: str


class ParentExhausted(Event):
    """The agent has nothing left to propose for this node."""

    TYPE: ClassVar[str] = "parent_exhausted"

    node_id: str
    reason: str


class ReplicatesStarted(Event):
    """Seed replicates begin: ``runs`` lists ``[node_id, seed]`` pairs, ``purpose`` says why.

    ``purpose`` is ``seed noise`` (the best seed, before the search) or ``finalists``.
    """

    TYPE: ClassVar[str] = "replicates_started"

    purpose: str
    runs: list[tuple[str, int]]


class ReplicateScored(Event):
    """A node re-run with another ``RLAB_SEED``: its validation score or why it failed."""

    TYPE: ClassVar[str] = "replicate_scored"

    node_id: str
    seed: int
    primary: float | None
    failure: str | None = None
    wall_s: float = 0.0


class SeedNoiseMeasured(Event):
    """The run's training-seed noise: the best seed's scores under other ``RLAB_SEED`` values.

    ``sd`` (the standard deviation of ``scores``) is counted in every paired verdict of the
    run; ``None`` when fewer than two seeds scored.
    """

    TYPE: ClassVar[str] = "seed_noise_measured"

    node_id: str
    scores: dict[str, float]
    failures: dict[str, str] = {}
    sd: float | None = None


class FinalistsChosen(Event):
    """The node chosen by mean validation over seed replicates, the rule in words, the table."""

    TYPE: ClassVar[str] = "finalists_chosen"

    node_id: str
    rule: str
    #: One row per finalist: ``node``, ``scores`` (seed -> score), ``mean``, ``spread``.
    finalists: list[dict[str, Any]]


class RunStopped(Event):
    """The search ended, with why, and the node validation chose (if any)."""

    TYPE: ClassVar[str] = "run_stopped"

    reason: str
    best: str | None


class BestExported(Event):
    """``best/`` holds this node's source, artifacts, submission and manifest."""

    TYPE: ClassVar[str] = "best_exported"

    node_id: str


class FinalScored(Event):
    """``rlab final`` scored the test split for this node; no test number is journaled."""

    TYPE: ClassVar[str] = "final"

    node_id: str
    forced: bool
    report: str


#: Every event type by its name on disk.
EVENT_TYPES: dict[str, type[Event]] = {
    model.TYPE: model
    for model in (
        RunStarted,
        RunResumed,
        NodeStarted,
        NodeFinished,
        NodeAbandoned,
        BranchClosed,
        ParentExhausted,
        ReplicatesStarted,
        ReplicateScored,
        SeedNoiseMeasured,
        FinalistsChosen,
        RunStopped,
        BestExported,
        FinalScored,
    )
}


def parse_event(line: Mapping[str, Any]) -> Event:
    """The record of one journal line (as :func:`rlab_core.journal.read_events` gives it).

    Raises :class:`ValueError` for an unknown type and pydantic's ``ValidationError`` for a
    line that does not fit its type.
    """
    kind = line.get("type")
    model = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ValueError(f"unknown journal event type {kind!r}")
    fields = {key: value for key, value in line.items() if key not in ENVELOPE}
    if model is NodeStarted:
        # the one shape's fields, absent from an older agent failure's line
        fields = {"iteration": None, "hypothesis": None, **fields}
    return model.model_validate(fields)
