"""Building a child from a proposal: the pure function the loop and agents' dry runs share."""

from __future__ import annotations

from rlab_core.api import ChildSource, Edit, FailureStage, Proposal, build_child

PARENT = {
    "main.py": "SLOPE = 1.0\nINTERCEPT = 0.0\nprint(SLOPE)\n",
    "data/notes.txt": "read me\n",
}
EDITABLE = ["*.py"]


def _proposal(*edits: tuple[str, str, str], files: dict[str, str] | None = None) -> Proposal:
    return Proposal(
        hypothesis="a change",
        edits=[Edit(file=f, anchor=a, replacement=r) for f, a, r in edits],
        files=files,
    )


def test_an_edit_is_applied_with_its_changed_files_and_diff():
    child = build_child(PARENT, _proposal(("main.py", "SLOPE = 1.0\n", "SLOPE = 2.0\n")), EDITABLE)
    assert isinstance(child, ChildSource) and child.ok and child.failure is None
    assert child.files["main.py"] == "SLOPE = 2.0\nINTERCEPT = 0.0\nprint(SLOPE)\n"
    assert child.files["data/notes.txt"] == "read me\n"
    assert child.changed == ["main.py"]
    assert child.diff.startswith("--- a/main.py\n+++ b/main.py\n")
    assert "-SLOPE = 1.0\n+SLOPE = 2.0\n" in child.diff
    assert PARENT["main.py"].startswith("SLOPE = 1.0")  # the parent's files are not touched


def test_rewrites_then_edits_and_new_files_inside_the_boundary():
    proposal = _proposal(
        ("features.py", "X = 1\n", "X = 2\n"),
        files={"features.py": "X = 1\n"},
    )
    child = build_child(PARENT, proposal, EDITABLE)
    assert child.ok and child.changed == ["features.py"] and child.files["features.py"] == "X = 2\n"
    assert "--- /dev/null\n+++ b/features.py\n" in child.diff


def test_a_change_outside_the_boundary_is_refused_at_the_edit_stage():
    for proposal, message in (
        (
            _proposal(("data/notes.txt", "read me\n", "edited\n")),
            "outside the files this task allows",
        ),
        (_proposal(files={"../evil.py": "x = 1\n"}), "not a path inside the candidate folder"),
    ):
        child = build_child(PARENT, proposal, EDITABLE)
        assert not child.ok and child.failure.stage == FailureStage.EDIT
        assert message in child.failure.message
        assert child.files is PARENT and child.changed == [] and child.diff == ""


def test_an_anchor_that_does_not_occur_once_is_an_edit_failure():
    missing = build_child(PARENT, _proposal(("main.py", "SLOPE = 9.0\n", "x")), EDITABLE)
    assert missing.failure.stage == FailureStage.EDIT
    assert "does not occur" in missing.failure.message
    twice = build_child(PARENT, _proposal(("main.py", "SLOPE", "S")), EDITABLE)
    assert twice.failure.stage == FailureStage.EDIT and "occurs 2 times" in twice.failure.message


def test_a_new_capability_is_refused_by_the_guard_and_keeps_its_diff_as_evidence():
    proposal = _proposal(("main.py", "print(SLOPE)\n", "import subprocess\nprint(SLOPE)\n"))
    child = build_child(PARENT, proposal, EDITABLE)
    assert not child.ok and child.failure.stage == FailureStage.GUARD
    assert "subprocess" in child.failure.message
    assert child.files is PARENT  # nothing of the refused change is kept to build on
    assert child.changed == ["main.py"] and "+import subprocess" in child.diff


def test_the_tasks_forbidden_tokens_are_refused_and_a_capability_the_parent_had_is_not():
    proposal = _proposal(("main.py", "print(SLOPE)\n", "print(SLOPE, 'LABELS')\n"))
    refused = build_child(PARENT, proposal, EDITABLE, forbidden_tokens=["LABELS"])
    assert refused.failure.stage == FailureStage.GUARD and "LABELS" in refused.failure.message
    assert build_child(PARENT, proposal, EDITABLE).ok  # not forbidden for this task
    parent = {"main.py": "import subprocess\nX = 1\n"}
    kept = build_child(parent, _proposal(("main.py", "X = 1\n", "X = 2\n")), EDITABLE)
    assert kept.ok


def test_a_proposal_that_changes_nothing_fails_at_the_edit_stage():
    for proposal in (
        _proposal(),
        _proposal(("main.py", "SLOPE = 1.0\n", "SLOPE = 1.0\n")),
        _proposal(files={"main.py": PARENT["main.py"]}),
    ):
        child = build_child(PARENT, proposal, EDITABLE)
        assert child.failure.stage == FailureStage.EDIT
        assert child.failure.message == "The proposal changes nothing."
        assert child.changed == [] and child.diff == ""
