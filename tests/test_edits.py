"""Anchored edits, the edit boundary and diffs."""

from __future__ import annotations

import pytest

from rlab_core.edits import apply_edit, apply_edits, apply_rewrite, check_boundary, unified_diff
from rlab_core.errors import EditError
from rlab_core.records import Edit

SOURCE = {
    "main.py": "import numpy as np\n\nLR = 0.1\nDEPTH = 3\n\ndef fit():\n    return LR * DEPTH\n",
    "util.py": "X = 1\nX = 1\n",
}
PY = ("*.py",)


def test_anchor_that_occurs_once_is_replaced():
    result = apply_edit(
        SOURCE, Edit(file="main.py", anchor="LR = 0.1\n", replacement="LR = 0.05\n"), PY
    )
    assert "LR = 0.05\n" in result["main.py"] and "LR = 0.1" not in result["main.py"]
    assert SOURCE["main.py"].count("LR = 0.1") == 1  # the input is not mutated


def test_missing_anchor_shows_the_closest_text():
    with pytest.raises(EditError) as err:
        apply_edit(SOURCE, Edit(file="main.py", anchor="LR = 0.2\n", replacement="LR = 0.05\n"), PY)
    message = str(err.value)
    assert "does not occur in 'main.py'" in message
    assert "lines 3-3" in message and "LR = 0.1" in message


def test_ambiguous_anchor_names_every_line():
    with pytest.raises(EditError, match=r"occurs 2 times in 'util.py' \(lines 1, 2\)"):
        apply_edit(SOURCE, Edit(file="util.py", anchor="X = 1", replacement="X = 2"), PY)


def test_edits_compose_in_order_and_a_failing_one_is_numbered():
    edits = [
        Edit(file="main.py", anchor="LR = 0.1", replacement="LR = 0.2"),
        Edit(file="main.py", anchor="LR = 0.2", replacement="LR = 0.3"),
    ]
    assert "LR = 0.3" in apply_edits(SOURCE, edits, PY)["main.py"]
    with pytest.raises(EditError, match=r"^Edit 2 of 2: "):
        apply_edits(SOURCE, [edits[0], Edit(file="main.py", anchor="nope", replacement="")], PY)


def test_new_file_with_empty_anchor_and_boundary_rules():
    created = apply_edit(SOURCE, Edit(file="features.py", anchor="", replacement="A = 1\n"), PY)
    assert created["features.py"] == "A = 1\n"
    with pytest.raises(EditError, match="empty anchor"):
        apply_edit(SOURCE, Edit(file="main.py", anchor="", replacement="x"), PY)
    with pytest.raises(EditError, match="does not exist"):
        apply_edit(SOURCE, Edit(file="other.py", anchor="x", replacement="y"), PY)
    for bad in ("../escape.py", "/etc/passwd.py", "sub/../../x.py"):
        with pytest.raises(EditError, match="not a path inside"):
            apply_edit(SOURCE, Edit(file=bad, anchor="", replacement=""), PY)
    with pytest.raises(EditError, match="outside the files this task allows"):
        apply_edit(SOURCE, Edit(file="data.csv", anchor="", replacement="1,2"), PY)


def test_rewrites_follow_the_same_boundary_and_the_diff_is_unified():
    after = apply_rewrite(
        SOURCE, {"main.py": SOURCE["main.py"].replace("DEPTH = 3", "DEPTH = 5")}, PY
    )
    assert check_boundary(SOURCE, after, PY) == ["main.py"]
    diff = unified_diff(SOURCE, after)
    assert diff.startswith("--- a/main.py\n+++ b/main.py\n@@ ")
    assert "-DEPTH = 3\n+DEPTH = 5\n" in diff
    with pytest.raises(EditError):
        apply_rewrite(SOURCE, {"Makefile": "all:\n"}, PY)
    added = unified_diff(SOURCE, {**SOURCE, "new.py": "y = 2"})
    assert "--- /dev/null\n+++ b/new.py" in added and "\\ No newline at end of file" in added
