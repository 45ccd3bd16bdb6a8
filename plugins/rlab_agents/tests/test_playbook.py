"""Tests of the offline ``playbook`` agent on a tiny candidate and a hand-made playbook."""

from __future__ import annotations

import pytest
from rlab_agents import plugin
from rlab_agents.playbook import PlaybookAgent, PlaybookConfig, lineage_of

from rlab_core.api import (
    AgentContext,
    AgentInfo,
    BudgetProgress,
    ConfigError,
    Edit,
    NodeKind,
    NodeSummary,
    NothingToPropose,
    PlaybookMove,
    RepairContext,
    apply_edits,
    moves_on_lineage,
)
from rlab_core.testing import check_agent

pytest_plugins = ["rlab_core.testing.fixtures"]

SEED = {"main.py": "A = 1\nB = 2\nC = 3\n# extra lines\nprint(A + B + C)\n"}
EDITABLE = ["*.py"]


def _edit(anchor: str, replacement: str) -> Edit:
    return Edit(file="main.py", anchor=anchor, replacement=replacement)


MOVE_A = PlaybookMove(
    id="a",
    hypothesis="Raise A to 10.",
    edits=[_edit("A = 1\n", "A = 10\n")],
    rank=10,
    fix=[_edit("print(A + B + C)\n", "print(int(A) + B + C)\n")],
)
MOVE_B = PlaybookMove(
    id="b", hypothesis="Raise B to 20.", edits=[_edit("B = 2\n", "B = 20\n")], rank=20
)
MOVE_C = PlaybookMove(
    id="c", hypothesis="Raise C to 30.", edits=[_edit("C = 3\n", "C = 30\n")], rank=30
)
#: best-ranked of all, but its anchor is nowhere in the source
MOVE_STALE = PlaybookMove(
    id="stale", hypothesis="Change Z.", edits=[_edit("Z = 0\n", "Z = 1\n")], rank=1
)
#: best-ranked after ``stale``, but only once ``b`` is in the lineage
MOVE_AFTER_B = PlaybookMove(
    id="after-b",
    hypothesis="Add D once B is raised.",
    edits=[_edit("# extra lines\n", "# extra lines\nD = B * 2\n")],
    rank=5,
    requires=["b"],
)
#: declares a fix whose anchor does not apply
MOVE_BAD_FIX = PlaybookMove(
    id="bad-fix",
    hypothesis="Rename the print.",
    edits=[_edit("print(", "print (")],
    rank=40,
    fix=[_edit("no such text", "x")],
)
PLAYBOOK = [MOVE_C, MOVE_STALE, MOVE_B, MOVE_AFTER_B, MOVE_A, MOVE_BAD_FIX]  # unsorted on purpose


def _node(
    node_id: str,
    parent_id: str | None,
    move_id: str | None,
    *,
    status: str = "evaluated",
    primary: float | None = 0.5,
    improved: bool = False,
) -> NodeSummary:
    return NodeSummary(
        id=node_id,
        parent_id=parent_id,
        kind=NodeKind.SEED if parent_id is None else NodeKind.IMPROVE,
        status=status,
        hypothesis=f"hypothesis of {node_id}",
        move_id=move_id,
        primary=primary if status == "evaluated" else None,
        improved_on_parent=improved,
        failure=None if status == "evaluated" else "[run] exited with code 1",
    )


def _source_of(tree: list[NodeSummary], node_id: str) -> dict[str, str]:
    """The source of a node: the seed with every move of its lineage applied."""
    moves = {m.id: m for m in PLAYBOOK}
    files = dict(SEED)
    for node in lineage_of(tree, node_id):
        if node.move_id in moves:
            files = apply_edits(files, moves[node.move_id].edits, EDITABLE)
    return files


def _context(tree: list[NodeSummary], parent_id: str, *, seed: int = 0) -> AgentContext:
    parent = next(n for n in tree if n.id == parent_id)
    return AgentContext(
        task="toy:sum",
        problem="Make the printed sum large.",
        primary_metric="sum",
        higher_is_better=True,
        parent=parent,
        parent_source=_source_of(tree, parent_id),
        tree=tree,
        progress=BudgetProgress(iterations_used=len(tree) - 1, iterations_max=10),
        editable_files=EDITABLE,
        playbook=PLAYBOOK,
        seed=seed,
    )


def _repair_context(tree: list[NodeSummary], failed_id: str) -> RepairContext:
    failed = next(n for n in tree if n.id == failed_id)
    return RepairContext(
        **_context(tree, failed_id).model_dump(),
        original_hypothesis=failed.hypothesis,
        error="exited with code 1: TypeError",
        log_tail="Traceback ...\nTypeError",
    )


def _agent(exploration: float = 0.0) -> PlaybookAgent:
    return PlaybookAgent(PlaybookConfig(exploration=exploration))


SEED_ONLY = [_node("n0000", None, "seed-program")]


# --------------------------------------------------------------------------- proposing


def test_proposes_best_ranked_applicable_move() -> None:
    proposal = _agent().propose(_context(SEED_ONLY, "n0000"))
    # 'stale' (rank 1) does not apply, 'after-b' (rank 5) needs 'b': 'a' (rank 10) is next
    assert proposal.move_id == "a"
    assert proposal.hypothesis == MOVE_A.hypothesis
    assert proposal.edits == MOVE_A.edits
    assert proposal.usage.total_tokens == 0 and proposal.usage.cost_usd == 0


def test_candidates_are_in_rank_order_and_skip_stale_anchors() -> None:
    usable = _agent().candidates(_context(SEED_ONLY, "n0000"))
    assert [m.id for m in usable] == ["a", "b", "c", "bad-fix"]


def test_deterministic_for_a_seed() -> None:
    context = _context(SEED_ONLY, "n0000", seed=7)
    first = [_agent(0.5).propose(context).move_id for _ in range(5)]
    assert len(set(first)) == 1
    again = _agent(0.5).propose(_context(SEED_ONLY, "n0000", seed=7))
    assert again.move_id == first[0]


def test_exploration_one_picks_a_lower_ranked_move() -> None:
    chosen = {
        _agent(1.0).propose(_context(SEED_ONLY, "n0000", seed=seed)).move_id for seed in range(20)
    }
    assert "a" not in chosen
    assert chosen <= {"b", "c", "bad-fix"} and len(chosen) > 1


def test_never_repeats_a_move_tried_on_the_lineage() -> None:
    # 'a' was tried from the seed and did not help: the seed's next child gets 'b'
    tree = [*SEED_ONLY, _node("n0001", "n0000", "a", primary=0.4)]
    assert _agent().propose(_context(tree, "n0000")).move_id == "b"
    # a failed child counts as tried too
    tree.append(_node("n0002", "n0000", "b", status="failed"))
    assert _agent().propose(_context(tree, "n0000")).move_id == "c"


def test_moves_tried_off_the_lineage_stay_available() -> None:
    # n0002 ('b') is a grandchild of the seed on another branch, not a child of the lineage
    tree = [
        *SEED_ONLY,
        _node("n0001", "n0000", "a", improved=True),
        _node("n0002", "n0001", "b", primary=0.4),
        _node("n0003", "n0000", "c", primary=0.4),
    ]
    agent = _agent()
    applied, tried = moves_on_lineage(_context(tree, "n0003"))
    assert applied == {"seed-program", "c"}
    assert tried == {"seed-program", "a", "c"}
    assert agent.propose(_context(tree, "n0003")).move_id == "b"


def test_composes_on_an_improving_move() -> None:
    tree = [*SEED_ONLY, _node("n0001", "n0000", "a", primary=0.6, improved=True)]
    context = _context(tree, "n0001")
    assert "A = 10\n" in context.parent_source["main.py"]
    proposal = _agent().propose(context)
    assert proposal.move_id == "b"
    child = apply_edits(context.parent_source, proposal.edits, EDITABLE)["main.py"]
    assert "A = 10\n" in child and "B = 20\n" in child


def test_requires_is_honoured() -> None:
    tree = [
        *SEED_ONLY,
        _node("n0001", "n0000", "a", improved=True),
        _node("n0002", "n0001", "b", improved=True),
    ]
    # 'after-b' (rank 5) becomes the best candidate once 'b' is in the lineage
    assert _agent().propose(_context(tree, "n0002")).move_id == "after-b"
    # ... but not on a lineage without 'b'
    assert _agent().propose(_context(tree, "n0001")).move_id == "c"


def test_a_repaired_move_counts_as_applied() -> None:
    tree = [
        *SEED_ONLY,
        _node("n0001", "n0000", "b", status="failed"),
        _node("n0002", "n0001", "b:fix", improved=True),
    ]
    context = _context(tree, "n0002")
    applied, tried = moves_on_lineage(context)
    assert "b" in applied and "b" in tried
    assert _agent().propose(context).move_id == "after-b"


def test_nothing_to_propose_when_every_move_is_spent() -> None:
    tree = [
        *SEED_ONLY,
        _node("n0001", "n0000", "a", primary=0.1),
        _node("n0002", "n0000", "b", primary=0.1),
        _node("n0003", "n0000", "c", primary=0.1),
        _node("n0004", "n0000", "bad-fix", primary=0.1),
    ]
    with pytest.raises(NothingToPropose, match="n0000"):
        _agent().propose(_context(tree, "n0000"))


def test_passes_the_conformance_kit() -> None:
    tree = [*SEED_ONLY, _node("n0001", "n0000", "a", improved=True)]
    for exploration in (0.0, 1.0):
        proposal = check_agent(_agent(exploration), _context(tree, "n0001"))
        assert proposal.move_id in {"b", "c", "bad-fix"}


# --------------------------------------------------------------------------- repairing


def test_repair_returns_the_declared_fix() -> None:
    tree = [*SEED_ONLY, _node("n0001", "n0000", "a", status="failed")]
    proposal = _agent().repair(_repair_context(tree, "n0001"))
    assert proposal is not None
    assert proposal.move_id == "a:fix"
    assert proposal.edits == MOVE_A.fix
    assert "TypeError" in proposal.hypothesis


def test_repair_declines_without_a_usable_fix() -> None:
    tree = [
        *SEED_ONLY,
        _node("n0001", "n0000", "b", status="failed"),  # 'b' declares no fix
        _node("n0002", "n0000", "bad-fix", status="failed"),  # its fix does not apply
        _node("n0003", "n0000", None, status="failed"),  # not a playbook node
    ]
    for failed in ("n0001", "n0002", "n0003"):
        assert _agent().repair(_repair_context(tree, failed)) is None, failed


def test_repair_never_repairs_a_failed_fix() -> None:
    tree = [
        *SEED_ONLY,
        _node("n0001", "n0000", "a", status="failed"),
        _node("n0002", "n0001", "a:fix", status="failed"),
    ]
    assert _agent().repair(_repair_context(tree, "n0002")) is None


# --------------------------------------------------------------------------- registration


def test_registered_through_the_plugin_host(plugin_host, register_plugin) -> None:
    register_plugin(plugin, name="agents")
    registered = plugin_host.get("agents", "playbook")
    assert isinstance(registered.info, AgentInfo)
    assert registered.info.config is PlaybookConfig
    agent = plugin_host.create("agents", "playbook", {"exploration": 0.0})
    assert isinstance(agent, PlaybookAgent)
    assert agent.propose(_context(SEED_ONLY, "n0000")).move_id == "a"
    with pytest.raises(ConfigError, match="exploration"):
        plugin_host.create("agents", "playbook", {"explore": 0.5})
    with pytest.raises(ConfigError):
        plugin_host.create("agents", "playbook", {"exploration": 2.0})
