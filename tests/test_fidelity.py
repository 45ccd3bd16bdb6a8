"""Multi-fidelity: screens at ``mini``, their yardstick, promotion, and only full scores
competing; what the knowledge base learns from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlab_core.config import RunConfig
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.runner import start_run
from rlab_core.testing import playbook as playbook_plugin
from rlab_core.testing.toy import extra, plugin as toy_plugin


@pytest.fixture
def host() -> PluginHost:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(toy_plugin, name="toy")
    host.register(playbook_plugin, name="ranked-playbook")
    return host


def move(move_id: str, code: str) -> dict:
    return {"id": move_id, "hypothesis": f"{move_id}: {code}", "edits": [extra(code)]}


def staged_run(host: PluginHost, tmp_path: Path, moves: list[dict], iterations: int):
    config = RunConfig(
        task="toy:line",
        agent="ranked-playbook",
        benchmark_options={"playbook": moves, "staged": True},
        out=tmp_path / "runs",
        iterations=iterations,
        min_iterations=100,
        finalists=0,
        noise_seeds=0,
    )
    outcome = start_run(host, config)
    return outcome, replay(outcome.run.journal_path).tree


def test_a_screen_worse_than_its_yardstick_is_not_promoted(host, tmp_path, rlab_cache):
    # y = 3x + 1: a slope of 0.5 is worse than the seed's 1.0, a slope of 2.0 better
    moves = [move("worse", "SLOPE = 0.5"), move("better", "SLOPE = 2.0")]
    _, tree = staged_run(host, tmp_path, moves, iterations=10)
    by_move = {n.move_id: n for n in tree}
    reference, worse, better = by_move["screen-reference"], by_move["worse"], by_move["better"]
    # one yardstick for both screens: the seed re-run unchanged at mini fidelity
    assert [n.move_id for n in tree].count("screen-reference") == 1
    assert reference.parent_id == "n0000" and reference.diff == "" and reference.stage == "mini"
    assert worse.stage == better.stage == "mini"
    assert worse.gain.against == better.gain.against == reference.id
    assert worse.gain.delta < 0 < better.gain.delta
    promoted = [n for n in tree if n.move_id == "promote"]
    # the worse screen stops at mini; the better one runs again at full, unchanged
    assert [p.parent_id for p in promoted] == [better.id]
    assert promoted[0].stage == "full" and promoted[0].diff == ""
    assert promoted[0].score.primary == pytest.approx(better.score.primary)
    # screens never compete: the promotion is the run's best, judged against the full seed
    assert not worse.accepted and not better.accepted and not reference.accepted
    assert tree.best().id == promoted[0].id
    assert promoted[0].gain.against == "n0000" and promoted[0].accepted


def test_screens_are_never_parents_of_new_moves(host, tmp_path, rlab_cache):
    moves = [move(f"m{i}", f"SLOPE = {1.2 + i / 10}") for i in range(4)]
    _, tree = staged_run(host, tmp_path, moves, iterations=9)
    screens = {n.id for n in tree if n.stage == "mini"}
    assert screens, "the run screened nothing"
    for node in tree:
        if node.parent_id in screens:
            # only the core's promotion of a screen hangs below it
            assert node.move_id == "promote", (node.id, node.move_id)


def test_the_knowledge_base_learns_a_promoted_change_once_under_its_own_move(
    host, tmp_path, rlab_cache
):
    from rlab_core.knowledge.harvest import lessons_from_run

    moves = [move("worse", "SLOPE = 0.5"), move("better", "SLOPE = 2.0")]
    outcome, tree = staged_run(host, tmp_path, moves, iterations=10)
    lessons = {lesson.node_id: lesson for lesson in lessons_from_run(outcome.run.root)}
    by_move = {n.move_id: n for n in tree}
    promoted = by_move["promote"]
    # the yardstick teaches nothing; the promoted screen is learnt through its promotion,
    # whose full-fidelity gain against the seed is the evidence, under the screen's move
    assert by_move["screen-reference"].id not in lessons
    assert by_move["better"].id not in lessons
    lesson = lessons[promoted.id]
    assert lesson.move_id == "better" and lesson.hypothesis == by_move["better"].hypothesis
    assert "SLOPE = 2.0" in lesson.diff and lesson.gain == promoted.gain.delta > 0
    # a screen that was not promoted keeps its own (mini) lesson: a move that did worse
    assert lessons[by_move["worse"].id].gain < 0
