"""The tree an LLM agent reads carries each score's standard error and each gain's verdict."""

from __future__ import annotations

from rlab_agents.prompt import render_node

from rlab_core.api import NodeKind, NodeSummary


def _summary(**fields) -> NodeSummary:
    base = {
        "id": "n0003",
        "parent_id": "n0002",
        "kind": NodeKind.IMPROVE,
        "status": "evaluated",
        "hypothesis": "Require 200 rows per leaf.",
        "primary": 0.66733,
    }
    return NodeSummary(**{**base, **fields})


def test_a_gain_inside_the_noise_is_not_called_an_improvement():
    line = render_node(
        _summary(standard_error=0.0070, verdict="within noise", improved_on_parent=False),
        "roc_auc",
        with_diff=False,
    )
    assert "val roc_auc=0.66733 ± 0.007 (within the noise of its parent)" in line
    assert "improved" not in line


def test_verdicts_and_scores_without_noise():
    better = render_node(_summary(standard_error=0.007, verdict="better"), "auc", with_diff=False)
    assert "(better than its parent beyond the noise)" in better
    plain = render_node(_summary(improved_on_parent=True), "auc", with_diff=False)
    assert "val auc=0.66733 (improved on its parent)" in plain and "±" not in plain
    seed = render_node(
        _summary(parent_id=None, kind=NodeKind.SEED, standard_error=0.007), "auc", with_diff=False
    )
    assert "val auc=0.66733 ± 0.007:" in seed
