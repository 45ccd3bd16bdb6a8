"""When a playbook tunes: next_move_kind and pending_burst over hand-built trees."""

from __future__ import annotations

import pytest

from rlab_core.agent_context import AgentContext, BudgetProgress, NodeSummary
from rlab_core.records import NodeKind, TuningTrial
from rlab_core.tuning.policy import (
    burst_size,
    burst_trials,
    is_structural,
    next_move_kind,
    pending_burst,
)
from rlab_core.tuning.space import declared_params

#: Two declared parameters: the default burst is 4 trials.
SOURCE = "RATE = 0.1  # tune: float 0.01..1 log\nDEPTH = 3  # tune: int 1..8\n"
SEVEN = "".join(f"P{i} = 1  # tune: int 1..9\n" for i in range(7))


def build(tokens: str, base: str = "n0000") -> list[NodeSummary]:
    """A tree from tokens, oldest first, after the seed n0000.

    ``S-``/``S+``: a structural node (not) accepted; ``F``: a failed structural node;
    ``Sr``: a running one; ``T``: a tuning trial on ``base``; ``Tr``: a running one;
    ``T6``: a trial that asked for a burst of 6; ``To``: a trial of another study (n0001);
    ``M``: a structural screen at mini fidelity; ``P+``/``P-``: the previous node's
    promotion (accepted or not); ``R+``: a repair of the previous node, accepted;
    ``D``: a draft, not accepted.
    """
    tree = [NodeSummary(id="n0000", parent_id=None, kind=NodeKind.SEED, status="evaluated",
                        hypothesis="seed", primary=0.5, accepted=True)]  # fmt: skip
    number = 0
    for token in tokens.split():
        nid, previous = f"n{len(tree):04d}", tree[-1].id
        fields: dict = {"id": nid, "parent_id": "n0000", "kind": NodeKind.IMPROVE,
                        "status": "evaluated", "hypothesis": token, "primary": 0.5}  # fmt: skip
        if token in ("S-", "S+", "D"):
            fields["accepted"] = token == "S+"
            fields["kind"] = NodeKind.DRAFT if token == "D" else NodeKind.IMPROVE
        elif token == "F":
            fields.update(status="failed", primary=None, accepted=None)
        elif token == "Sr":
            fields.update(status="running", primary=None)
        elif token == "M":
            fields.update(fidelity="mini", accepted=False)
        elif token in ("P+", "P-"):
            fields.update(parent_id=previous, move_id="promote", accepted=token == "P+")
            fields["tuning"] = tree[-1].tuning
        elif token == "R+":
            fields.update(parent_id=previous, kind=NodeKind.DEBUG, repair_of=previous)
            fields["accepted"] = True
        elif token.startswith("T"):
            number += 1
            study = "n0001" if token == "To" else base
            size = int(token[1:]) if token[1:].isdigit() else None
            fields.update(move_id="tune", accepted=False)
            fields["tuning"] = TuningTrial(base=study, number=number, params={}, burst=size)
            if token == "Tr":
                fields.update(status="running", primary=None, accepted=None)
        else:
            raise ValueError(token)
        tree.append(NodeSummary(**fields))
    return tree


def context(tree: list[NodeSummary], source: str = SOURCE, parent: str = "n0000") -> AgentContext:
    return AgentContext(
        task="toy:line",
        problem="predict y",
        primary_metric="score",
        higher_is_better=True,
        parent=next(n for n in tree if n.id == parent),
        parent_source={"main.py": source},
        tree=tree,
        progress=BudgetProgress(),
        editable_files=["*.py"],
    )


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ("", "structural"),  # structural moves first
        ("S-", "structural"),
        ("S- S-", "tune"),  # stalled: two structural nodes, none accepted
        ("S+ S-", "structural"),
        ("S- S+", "structural"),
        ("S- F", "tune"),  # a failed move is a stalled move
        ("S- D", "tune"),  # drafts are structural
        ("S- F R+", "structural"),  # ... unless its repair was accepted
        ("M P+ S-", "structural"),  # a screen accepted once promoted
        ("M P- S-", "tune"),
        ("S- Sr", "structural"),  # a running move is not judged yet
        ("S- S- Sr", "tune"),
        ("S- S- T", "tune"),  # inside the burst
        ("S- S- T T T", "tune"),
        ("S- S- T T T T", "structural"),  # burst of max(4, 2 params) done
        ("S- S- T T Tr Tr", "structural"),  # running trials count
        ("S- S- T Sr T", "tune"),  # a running move does not end the burst
        ("S- S- T T T T S-", "structural"),  # on top of the tuned parent
        ("S- S- T T T T S+ S-", "structural"),
        ("S- S- T T T T S- S-", "tune"),  # stalled again: a new burst
        ("S- S- T T T T S- S- T", "tune"),
        ("S- S- T6 T T T", "tune"),  # the size the burst's first trial asked for
        ("S- S- T6 T T T T T", "structural"),
        ("S- S- To", "structural"),  # another study's trial: no burst here, no stall since
        ("S- S- To S- S-", "tune"),
        ("S- S- T P+", "tune"),  # a trial's promotion is not another trial
    ],
)
def test_next_move_kind_over_hand_built_trees(tokens: str, expected: str) -> None:
    tree = build(tokens)
    assert next_move_kind(context(tree), structural_available=True) == expected
    assert next_move_kind(context(list(tree)), structural_available=True) == expected  # pure


def test_tuning_when_no_structural_move_applies_and_never_without_declarations() -> None:
    tree = build("S-")
    assert next_move_kind(context(tree), structural_available=False) == "tune"
    stalled = build("S- S-")
    for source in ("X = 1\n", "X = 9  # tune: int 1..3\n"):  # nothing, or unreadable
        ctx = context(stalled, source)
        assert next_move_kind(ctx, structural_available=True) == "structural"
        assert next_move_kind(ctx, structural_available=False) == "structural"


def test_burst_and_stall_are_the_callers_to_set() -> None:
    assert next_move_kind(context(build("S- S- T T")), structural_available=True, burst=2) == (
        "structural"
    )
    assert next_move_kind(context(build("S- S-")), structural_available=True, stall=3) == (
        "structural"
    )
    assert next_move_kind(context(build("S- S- S-")), structural_available=True, stall=3) == "tune"
    # seven declared parameters: a burst of seven by default
    seven = build("S- S- T T T T T T")
    assert next_move_kind(context(seven, SEVEN), structural_available=True) == "tune"
    assert next_move_kind(
        context(build("S- S- " + "T " * 7), SEVEN), structural_available=True
    ) == ("structural")


def test_the_burst_follows_the_study_when_the_parent_is_a_trial() -> None:
    tree = build("S- S- T T")
    ctx = context(tree, parent="n0004")  # the parent is trial 2: same study
    assert [n.id for n in burst_trials(ctx)] == ["n0003", "n0004"]
    assert next_move_kind(ctx, structural_available=True) == "tune"
    # a structural parent starts a study of its own: no burst on it yet, and no stall since
    assert burst_trials(context(tree, parent="n0001")) == []
    assert next_move_kind(context(tree, parent="n0001"), structural_available=True) == "structural"


def test_burst_size_is_one_per_parameter_at_least_four() -> None:
    assert burst_size(declared_params({"m.py": SOURCE})) == 4
    assert burst_size(declared_params({"m.py": SEVEN})) == 7


@pytest.mark.parametrize(
    ("tokens", "owed"),
    [
        ("", 0),
        ("T T", 0),  # a playbook's burst: nothing was asked for
        ("T3", 2),
        ("T3 Tr", 1),
        ("T3 S- T", 1),  # other nodes in between do not end it
        ("T3 T T", 0),
        ("T3 T T T", 0),
        ("T3 T T T2", 1),  # the latest request counts
        ("T3 To", 2),  # another study's trial is not this one's
        ("T3 P+", 2),  # a promotion is the same trial
    ],
)
def test_pending_burst_counts_the_trials_owed(tokens: str, owed: int) -> None:
    assert pending_burst(context(build(tokens))) == owed


def test_what_counts_as_structural() -> None:
    tree = build("S- D T M P- R+")
    assert [is_structural(n) for n in tree] == [False, True, True, False, True, False, False]
