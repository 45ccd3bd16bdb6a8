"""The journal: append-only, torn tails tolerated, replay folds the tree."""

from __future__ import annotations

import pytest

from rlab_core.errors import RunFolderError
from rlab_core.journal import Journal, read_events, replay
from rlab_core.records import Node, NodeKind, NodeStatus, Score


def _node(i: int, parent: str | None, primary: float | None) -> dict:
    score = (
        Score(metrics={"m": primary}, primary=primary, primary_metric="m")
        if primary is not None
        else None
    )
    status = NodeStatus.EVALUATED if score else NodeStatus.FAILED
    kind = NodeKind.SEED if parent is None else NodeKind.IMPROVE
    return Node(
        id=f"n{i:04d}",
        parent_id=parent,
        iteration=i,
        kind=kind,
        status=status,
        hypothesis=f"h{i}",
        score=score,
    ).model_dump(mode="json")


def _write(path):
    journal = Journal(path)
    journal.append("run_started", higher_is_better=True)
    for i, (parent, primary) in enumerate(
        [(None, 0.5), ("n0000", 0.6), ("n0001", None), ("n0001", 0.7)]
    ):
        journal.append("node_started", id=f"n{i:04d}")
        journal.append("node_finished", node=_node(i, parent, primary))
    journal.append("branch_closed", node_ids=["n0002"], reason="repair failed")
    journal.append("node_started", id="n0004")
    journal.close()


def test_replay_folds_nodes_closed_branches_and_in_flight_nodes(tmp_path):
    path = tmp_path / "journal.jsonl"
    _write(path)
    state = replay(path)
    assert [n.id for n in state.tree] == ["n0000", "n0001", "n0002", "n0003"]
    assert state.tree.get("n0002").status == NodeStatus.RECOVERED_FAILURE
    assert state.tree.best().id == "n0003"
    assert state.in_flight == ["n0004"] and state.next_node_id() == "n0005"
    assert state.tree.best_history() == [0.5, 0.6, 0.7]


def test_a_torn_last_line_is_tolerated_and_trimmed_before_appending(tmp_path):
    path = tmp_path / "journal.jsonl"
    _write(path)
    with open(path, "a") as handle:
        handle.write('{"seq": 99, "type": "node_fini')  # a kill in the middle of a write
    state = replay(path)
    assert state.torn_tail and len(state.tree) == 4
    journal = Journal(path)
    journal.append("run_resumed")
    journal.close()
    events, torn = read_events(path)
    assert not torn and events[-1]["type"] == "run_resumed" and events[-1]["seq"] == len(events) - 1


def test_a_corrupt_line_in_the_middle_is_a_clear_error(tmp_path):
    path = tmp_path / "journal.jsonl"
    _write(path)
    lines = path.read_text().splitlines(keepends=True)
    lines[3] = "garbage\n"
    path.write_text("".join(lines))
    with pytest.raises(RunFolderError, match="corrupt at line 4"):
        replay(path)
    with pytest.raises(RunFolderError, match="No journal"):
        replay(tmp_path / "missing.jsonl")


def test_unwritable_journal_location_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(RunFolderError, match="Cannot write the journal"):
        Journal(blocker / "journal.jsonl")
