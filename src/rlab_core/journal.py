"""The run's append-only event log and its replay.

Every event is one JSON line, written straight to the file and fsynced before the call
returns, so a run killed at any moment — SIGKILL included — leaves every completed event on
disk and at most one torn last line, which replay tolerates and ``Journal.open`` trims
before appending. A write that fails (a full disk) is rolled back to the last whole line
before the error goes on, so the journal stays readable and later lines stay whole.

The events are the typed records of :mod:`rlab_core.events`, written by
:class:`rlab_core.recorder.Recorder`. Replay folds them into a :class:`RunState` and
accepts every line rlab has written (older shapes included), reading only the keys it needs.
"""

from __future__ import annotations

import gc
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rlab_core.errors import RunFolderError
from rlab_core.events import (
    ENVELOPE,
    BestExported,
    BranchClosed,
    FinalistsChosen,
    FinalScored,
    NodeAbandoned,
    NodeFinished,
    NodeStarted,
    ParentExhausted,
    ReplicateScored,
    RunResumed,
    RunStarted,
    RunStopped,
    SeedNoiseMeasured,
)
from rlab_core.records import Node
from rlab_core.tree import Tree

JOURNAL_NAME = "journal.jsonl"


class Journal:
    """Appends events to ``journal.jsonl``; one instance per live run."""

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.seq = 0
        #: A failed write that could not be rolled back: no later line may follow it.
        self._broken: OSError | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._trim_torn_tail()
            self.seq = _count_lines(self.path)
            # unbuffered: a failed write leaves nothing behind in a buffer to be retried later
            self._fd = os.open(
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
        except OSError as exc:
            raise RunFolderError(
                f"Cannot write the journal at {self.path}: {exc.strerror}; choose a writable --out folder."
            ) from None

    def _trim_torn_tail(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb+") as handle:
            data = handle.read()
            if data and not data.endswith(b"\n"):
                handle.truncate(data.rfind(b"\n") + 1)

    def append(self, event_type: str, **payload: Any) -> dict[str, Any]:
        """Write one event and return it (with ``seq``, ``t`` and ``type``).

        Raises the ``OSError`` of a failed write after taking the partial line back out.
        """
        if self._broken is not None:
            raise self._broken
        event = {"seq": self.seq, "t": round(time.time(), 4), "type": event_type, **payload}
        line = json.dumps(event, default=str, separators=(",", ":")) + "\n"
        whole = os.fstat(self._fd).st_size
        try:
            write_all(self._fd, line.encode("utf-8"))
            if self.fsync:
                os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, whole)
            except OSError:
                self._broken = exc  # torn: replay skips it, the next Journal trims it
            raise
        self.seq += 1
        return event

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (the journal's one place of writing)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


def read_events(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """All complete events, and whether a torn (partial) last line was skipped."""
    events: list[dict[str, Any]] = []
    torn = False
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise RunFolderError(
            f"No journal at {path}; is this a run folder made by `rlab run`?"
        ) from None
    lines = raw.split(b"\n")
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if index == len(lines) - 1:
                torn = True  # the last write was cut short by a kill
                continue
            raise RunFolderError(
                f"The journal {path} is corrupt at line {index + 1}; it was edited by hand or the "
                "disk failed, restore it from a copy."
            ) from None
    return events, torn


@dataclass
class RunState:
    """Everything the journal says about a run, folded into one object."""

    tree: Tree = field(default_factory=Tree)
    run_info: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None
    in_flight: list[str] = field(default_factory=list)
    max_node_number: int = -1
    elapsed_s: float = 0.0
    finals: list[dict[str, Any]] = field(default_factory=list)
    best_exported: str | None = None
    exhausted: set[str] = field(default_factory=set)
    #: Finalists' seed replicates: node id -> seed -> the event's fields.
    replicates: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    #: The run's training-seed noise (the ``seed_noise_measured`` event's fields), once measured.
    seed_noise: dict[str, Any] | None = None
    #: The last finalists' choice (its event's fields), while still current.
    finalists: dict[str, Any] | None = None
    torn_tail: bool = False
    events: int = 0

    def next_node_id(self) -> str:
        return node_id(self.max_node_number + 1)


def node_id(number: int) -> str:
    return f"n{number:04d}"


class _NodeFinishedLine(BaseModel):
    """Parses a ``node_finished`` line straight into a :class:`Node` (faster than json + validate)."""

    model_config = ConfigDict(extra="ignore")

    t: float = 0.0
    node: Node


_NODE_FINISHED = f'"type":"{NodeFinished.TYPE}"'.encode()


def _lines(path: Path) -> Iterator[tuple[bytes, bool]]:
    """Each non-empty line of the journal with whether it is the last one."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise RunFolderError(
            f"No journal at {path}; is this a run folder made by `rlab run`?"
        ) from None
    with handle:
        previous: bytes | None = None
        for line in handle:
            if previous is not None:
                yield previous, False
            previous = line if line.strip() else None
        if previous is not None:
            yield previous, True


def replay(path: Path) -> RunState:
    """Fold the journal into a :class:`RunState` (the tree, budgets used, stop reason).

    Streams the file line by line and keeps no event list, so a 10,000-node journal
    replays in about a second in little memory.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()  # replay only allocates; collections would scan the growing tree for nothing
    try:
        return _fold(path)
    finally:
        if gc_was_enabled:
            gc.enable()


def _fold(path: Path) -> RunState:
    state = RunState()
    started: dict[str, dict[str, Any]] = {}
    session_start: float | None = None
    last_t: float | None = None
    for number, (line, is_last) in enumerate(_lines(path), start=1):
        try:
            if _NODE_FINISHED in line:
                finished = _NodeFinishedLine.model_validate_json(line)
                node = finished.node
                started.pop(node.id, None)
                state.tree.add(node)
                if node.evaluated:
                    state.finalists = None  # a later node reopens the choice
                state.max_node_number = max(state.max_node_number, int(node.id[1:]))
                last_t = finished.t
                state.events += 1
                continue
            event = json.loads(line)
        except (json.JSONDecodeError, ValidationError, UnicodeDecodeError):
            if is_last and not line.endswith(b"\n"):
                state.torn_tail = True  # the last write was cut short by a kill
                break
            raise RunFolderError(
                f"The journal {path} is corrupt at line {number}; it was edited by hand or the "
                "disk failed, restore it from a copy."
            ) from None
        state.events += 1
        kind = event.get("type")
        t = float(event.get("t", 0.0))
        if kind in (RunStarted.TYPE, RunResumed.TYPE):
            if session_start is not None and last_t is not None:
                state.elapsed_s += last_t - session_start
            session_start = t
            if kind == RunStarted.TYPE:
                state.run_info = {k: v for k, v in event.items() if k not in ENVELOPE}
            state.stop_reason = None
        elif kind == NodeStarted.TYPE:
            started[event["id"]] = event
            state.max_node_number = max(state.max_node_number, int(event["id"][1:]))
        elif kind == NodeAbandoned.TYPE:
            started.pop(event["id"], None)
        elif kind == BranchClosed.TYPE:
            state.tree.close_branch(event["node_ids"], event.get("reason", ""))
        elif kind == RunStopped.TYPE:
            state.stop_reason = event.get("reason")
        elif kind == ParentExhausted.TYPE:
            state.exhausted.add(event["node_id"])
        elif kind == ReplicateScored.TYPE:
            state.replicates.setdefault(event["node_id"], {})[int(event["seed"])] = event
        elif kind == SeedNoiseMeasured.TYPE:
            state.seed_noise = event
        elif kind == FinalistsChosen.TYPE:
            state.finalists = event
            state.tree.choose(event["node_id"], event.get("rule", ""))
        elif kind == BestExported.TYPE:
            state.best_exported = event.get("node_id")
        elif kind == FinalScored.TYPE:
            state.finals.append(event)
            continue  # `rlab final`, maybe days later, is not time the search spent
        last_t = t
    if session_start is not None and last_t is not None:
        state.elapsed_s += last_t - session_start
    state.in_flight = sorted(started)
    if "higher_is_better" in state.run_info:
        state.tree.higher_is_better = bool(state.run_info["higher_is_better"])
    return state
