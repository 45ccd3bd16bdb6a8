"""Typed journal events: each type round-trips through the journal and replay; one
``node_started`` shape; journals written before the typed events still replay."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import edit

from rlab_core.events import (
    EVENT_TYPES,
    BestExported,
    BranchClosed,
    Event,
    FinalistsChosen,
    FinalScored,
    NodeAbandoned,
    NodeFinished,
    NodeStarted,
    ParentExhausted,
    ReplicateScored,
    ReplicatesStarted,
    RunResumed,
    RunStarted,
    RunStopped,
    SeedNoiseMeasured,
    parse_event,
)
from rlab_core.journal import Journal, read_events, replay
from rlab_core.recorder import Recorder
from rlab_core.records import Node, NodeKind, NodeStatus, Score
from rlab_core.report.data import in_flight_nodes
from rlab_core.run_folder import RunFolder

SLOPE_2 = {
    "hypothesis": "Slope 2 is closer to the data.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 2.0\n")],
}


def _node(number: int, parent: str | None, primary: float | None) -> Node:
    score = Score(metrics={"m": primary}, primary=primary, primary_metric="m") if primary else None
    return Node(
        id=f"n{number:04d}",
        parent_id=parent,
        iteration=number,
        kind=NodeKind.SEED if parent is None else NodeKind.IMPROVE,
        status=NodeStatus.EVALUATED if score else NodeStatus.FAILED,
        hypothesis=f"h{number}",
        score=score,
    )


def _one_of_each() -> list[Event]:
    """A session of every event type, in an order a real run could write them."""
    return [
        RunStarted(
            run_id="r1",
            task="toy:line",
            primary_metric="m",
            higher_is_better=True,
            isolation="none",
            isolation_warning="candidates could read private data",
        ),
        NodeStarted(id="n0000", parent_id=None, kind=NodeKind.SEED, iteration=0, hypothesis="h0"),
        NodeFinished(node=_node(0, None, 0.5)),
        NodeStarted(
            id="n0001", parent_id="n0000", kind=NodeKind.IMPROVE, iteration=1, hypothesis="h1"
        ),
        NodeFinished(node=_node(1, "n0000", None)),
        BranchClosed(node_ids=["n0001"], reason="repair failed"),
        ParentExhausted(node_id="n0000", reason="no untried move"),
        NodeStarted(
            id="n0002", parent_id="n0000", kind=NodeKind.IMPROVE, iteration=2, hypothesis="h2"
        ),
        RunStopped(reason="killed", best="n0000"),
        RunResumed(
            nodes=2, abandoned=["n0002"], torn_tail=False, isolation="none", isolation_warning=None
        ),
        NodeAbandoned(id="n0002", reason="the run stopped while this node was running"),
        ReplicateScored(node_id="n0000", seed=1, primary=0.48, wall_s=0.2),
        ReplicateScored(node_id="n0000", seed=2, primary=None, failure="[run] exited with code 1"),
        ReplicatesStarted(purpose="finalists", runs=[("n0000", 1), ("n0000", 2)]),
        SeedNoiseMeasured(
            node_id="n0000", scores={"0": 0.5, "1": 0.48, "2": 0.49}, failures={}, sd=0.01
        ),
        FinalistsChosen(
            node_id="n0000",
            rule="chosen by mean validation over 2 seeds among the 1 best nodes accepted at 90%",
            finalists=[
                {
                    "node": "n0000",
                    "scores": {"0": 0.5, "1": 0.48},
                    "failures": {"2": "[run] exited with code 1"},
                    "mean": 0.49,
                    "spread": 0.014,
                }
            ],
        ),
        RunStopped(reason="iteration budget reached (2/2)", best="n0000"),
        BestExported(node_id="n0000"),
        FinalScored(node_id="n0000", forced=False, report="final_report.json"),
    ]


def test_every_event_type_round_trips_through_the_journal_observers_and_replay(tmp_path: Path):
    events = _one_of_each()
    assert {type(e) for e in events} == set(EVENT_TYPES.values())  # every type is covered
    run = RunFolder(tmp_path / "run")
    observed: list[tuple[dict[str, Any], Path]] = []
    sunk: list[dict[str, Any]] = []
    recorder = Recorder(
        Journal(run.journal_path),
        run,
        notify=lambda event, run_dir: observed.append((event, run_dir)),
        on_event=sunk.append,
    )
    for event in events:
        if isinstance(event, NodeFinished):
            run.node_dir(event.node.id).mkdir(parents=True)
            recorder.node_finished(event.node, bookkeeping_since=time.perf_counter())
        else:
            recorder.record(event)
    recorder.close()

    lines, torn = read_events(run.journal_path)
    assert not torn and [line["seq"] for line in lines] == list(range(len(events)))
    assert [line["type"] for line in lines] == [e.TYPE for e in events]
    assert [parse_event(line) for line in lines] == events
    # observers and the sink get each line as written, with the run folder
    assert [event for event, _ in observed] == lines == sunk
    assert {run_dir for _, run_dir in observed} == {run.root}
    # a finished node's record is also its result.json
    result = json.loads((run.node_dir("n0000") / "result.json").read_text())
    assert Node.model_validate(result) == events[2].node

    state = replay(run.journal_path)
    assert state.run_info["task"] == "toy:line" and state.tree.higher_is_better
    assert [n.id for n in state.tree] == ["n0000", "n0001"]
    assert state.tree.get("n0001").status == NodeStatus.RECOVERED_FAILURE
    assert state.exhausted == {"n0000"} and state.in_flight == []
    assert state.max_node_number == 2 and state.next_node_id() == "n0003"
    assert state.stop_reason == "iteration budget reached (2/2)"
    assert state.best_exported == "n0000"
    assert state.replicates["n0000"][1]["primary"] == 0.48
    assert state.replicates["n0000"][2]["failure"] == "[run] exited with code 1"
    assert state.finalists is not None and state.finalists["node_id"] == "n0000"
    assert state.tree.chosen_id == "n0000" and "mean validation" in (state.tree.chosen_rule or "")
    assert [f["node_id"] for f in state.finals] == ["n0000"]
    assert state.events == len(events)


def test_records_are_strict_when_written():
    with pytest.raises(ValueError):
        NodeStarted(
            id="n0001", parent_id="n0000", kind=NodeKind.IMPROVE
        )  # no iteration, hypothesis
    with pytest.raises(ValueError):
        RunStopped(reason="done", best=None, why="typo")
    with pytest.raises(ValueError, match="unknown journal event type 'node_paused'"):
        parse_event({"seq": 0, "t": 1.0, "type": "node_paused"})


def test_node_started_has_one_shape_for_built_nodes_and_agent_failures(run_toy):
    outcome = run_toy([{"agent_error": "the model replied with prose"}, SLOPE_2], debug_tries=0)
    lines, _ = read_events(outcome.run.journal_path)
    started = [line for line in lines if line["type"] == NodeStarted.TYPE]
    assert len(started) == 3  # seed, agent failure, slope 2
    shape = {"seq", "t", "type", "id", "parent_id", "kind", "iteration", "hypothesis"}
    assert all(set(line) == shape for line in started)
    tree = replay(outcome.run.journal_path).tree
    for line in started:
        event = parse_event(line)
        assert isinstance(event, NodeStarted)
        node = tree.get(event.id)
        assert (event.parent_id, event.kind, event.iteration, event.hypothesis) == (
            node.parent_id,
            node.kind,
            node.iteration,
            node.hypothesis,
        )
    failed = tree.get(started[1]["id"])
    assert failed.failure.stage == "agent" and failed.iteration == 1
    # every line of a real run parses into its typed record
    assert all(isinstance(parse_event(line), Event) for line in lines)


def test_a_journal_written_before_the_typed_events_still_replays(tmp_path: Path):
    """Old ``node_started`` payloads: an agent failure's had only id, parent_id and kind."""
    path = tmp_path / "run" / "journal.jsonl"
    journal = Journal(path)
    journal.append(
        "run_started",
        run_id="old",
        task="toy:line",
        primary_metric="m",
        higher_is_better=False,
        isolation="bubblewrap",
    )  # no isolation_warning yet
    journal.append(
        "node_started", id="n0000", parent_id=None, kind="seed", iteration=0, hypothesis="s"
    )
    journal.append("node_finished", node=_node(0, None, 0.5).model_dump(mode="json"))
    journal.append("node_started", id="n0001", parent_id="n0000", kind="improve")  # agent failure
    failed = _node(1, "n0000", None)
    journal.append("node_finished", node=failed.model_dump(mode="json"))
    journal.append("node_started", id="n0002", parent_id="n0000", kind="improve")  # killed here
    journal.close()

    state = replay(path)
    assert [n.id for n in state.tree] == ["n0000", "n0001"]
    assert state.in_flight == ["n0002"] and state.next_node_id() == "n0003"
    assert not state.tree.higher_is_better and state.run_info["isolation"] == "bubblewrap"
    lines, _ = read_events(path)
    old = parse_event(lines[3])
    assert old == NodeStarted(
        id="n0001", parent_id="n0000", kind=NodeKind.IMPROVE, iteration=None, hypothesis=None
    )
    assert parse_event(lines[0]) == RunStarted(
        run_id="old",
        task="toy:line",
        primary_metric="m",
        higher_is_better=False,
        isolation="bubblewrap",
        isolation_warning=None,
    )
    # the dashboard shows the killed node from its old-shaped line
    running = in_flight_nodes(RunFolder(path.parent), state)
    assert [(r["id"], r["iteration"], r["hypothesis"]) for r in running] == [
        ("n0002", None, "(waiting for the agent)")
    ]
