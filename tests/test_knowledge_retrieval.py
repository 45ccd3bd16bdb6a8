"""Retrieval for agents: the digest of earlier runs, its wiring into contexts, and the switch.

Real toy runs write their lessons back; a later run's node context (read back through the
real ``rlab show RUN --context NODE``) holds them, and ``--no-kg`` takes them away. The
digest itself is checked on a real store: similar tasks first, lessons that held above
one-off gains, failures as warnings, within its size budget, and no test-side number.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import edit, toy_config
from typer.testing import CliRunner

from rlab_core.agent_context import AgentContext, BudgetProgress, NodeSummary
from rlab_core.api import KnowledgePage, hookimpl, load_pages
from rlab_core.cli.app import app
from rlab_core.config import RunConfig, parse_overrides
from rlab_core.errors import ConfigError, PluginError
from rlab_core.knowledge.records import Lesson, TaskFingerprint
from rlab_core.knowledge.retrieve import relevant_knowledge
from rlab_core.knowledge.store import KnowledgeStore
from rlab_core.node_context import read_context
from rlab_core.playbook_rules import order_by_knowledge
from rlab_core.records import NodeKind
from rlab_core.task_records import PlaybookMove

SLOPE = [{"hypothesis": "Use the true slope 3", "edits": [edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")]}]
CRASH = {
    "hypothesis": "Crash on purpose",
    "edits": [edit("# extra behaviour\n", "raise SystemExit('boom')\n")],
}


# --------------------------------------------------------------------------- pages


def _page(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.md"
    path.write_text(text)
    return path


def test_load_pages_reads_front_matter_into_pages(tmp_path: Path) -> None:
    _page(
        tmp_path,
        "time-censoring",
        "---\ntitle: Time censoring\ntags: [leakage, time]\nsources:\n  - https://relbench.stanford.edu\n---\n"
        "Labels after the cutoff must never reach features.\n",
    )
    _page(tmp_path, "README", "not a page")
    pages = load_pages(tmp_path, "relbench")
    assert pages == [
        KnowledgePage(
            id="relbench/time-censoring",
            family="relbench",
            title="Time censoring",
            body="Labels after the cutoff must never reach features.",
            tags=["leakage", "time"],
            sources=["https://relbench.stanford.edu"],
        )
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no front matter\n", "does not open with"),
        ("---\ntitle: x\nbody\n", "no closing"),
        ("---\ntags: [a]\n---\nbody\n", "no 'title'"),
        ("---\ntitle: x\nauthor: me\n---\nbody\n", "unknown front-matter keys"),
        ("---\ntitle: x\ntags: 3\n---\nbody\n", "'tags' must be a list"),
        ("---\ntitle: x\n---\n\n", "empty body"),
    ],
)
def test_a_malformed_page_is_a_plugin_error_naming_the_file(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = _page(tmp_path, "bad", text)
    with pytest.raises(PluginError, match=problem) as caught:
        load_pages(tmp_path, "toy")
    assert str(path) in str(caught.value)


# --------------------------------------------------------------------------- the digest


def _fp(task: str, *, family: str | None = None, metric: str = "rmse") -> TaskFingerprint:
    benchmark = task.partition(":")[0]
    return TaskFingerprint(
        benchmark=benchmark,
        task=task,
        family=family or benchmark,
        task_type="regression",
        metric=metric,
        higher_is_better=False,
        rows=1000,
    )


def _lesson(run: str, node: str, fp: TaskFingerprint, move: str | None, **values) -> Lesson:
    values.setdefault("status", "evaluated")
    values.setdefault("node_kind", "improve")
    values.setdefault("hypothesis", f"apply {move}")
    return Lesson(
        run_id=run, node_id=node, recorded_at=time.time(), fingerprint=fp, move_id=move, **values
    )


@pytest.fixture
def store(tmp_path: Path) -> KnowledgeStore:
    here, sibling, other = _fp("rel:a"), _fp("rel:b"), _fp("img:c", metric="accuracy")
    other = other.model_copy(update={"task_type": "classification"})
    store = KnowledgeStore(tmp_path / "kb.sqlite")
    store.add_lessons(
        [
            # held on two runs of a sibling task
            _lesson("r1", "n1", sibling, "target-encoding", verdict="better", gain=0.02),
            _lesson("r2", "n1", sibling, "target-encoding", verdict="better", gain=0.04),
            # a one-off gain on this very task
            _lesson("r3", "n1", here, "more-trees", verdict="better", gain=0.01),
            # the chosen node of a final: its val-test gap must never reach an agent
            _lesson("r3", "n2", here, "lags", verdict="better", gain=0.005, val_test_gap=0.123456),
            # within noise: neither a gain nor a warning
            _lesson("r3", "n3", here, "shuffle", verdict="within noise", gain=0.0001),
            # hurt twice
            _lesson("r1", "n2", sibling, "drop-dates", verdict="worse", gain=-0.03),
            _lesson("r2", "n2", sibling, "drop-dates", verdict="worse", gain=-0.01),
            # failed with a cause
            _lesson(
                "r1", "n3", sibling, "gnn", status="failed", failure_cause="run: CUDA out of memory"
            ),
            # another family and task type: not similar enough to tell
            _lesson("r9", "n1", other, "augment", verdict="better", gain=0.5),
            _lesson("r8", "n1", other, "augment", verdict="better", gain=0.5),
        ]
    )
    return store


def test_the_digest_ranks_held_above_one_off_and_warns_of_failures(store: KnowledgeStore) -> None:
    digest = relevant_knowledge(store, _fp("rel:a"))
    assert [e.move_id for e in digest.lessons_held] == ["target-encoding"]
    held = digest.lessons_held[0]
    assert (held.held, held.tries, held.mean_gain, held.tasks) == (2, 2, 0.03, ["rel:b"])
    # this task's own one-off gains (similarity 1.0) come before anything of a sibling
    assert [e.move_id for e in digest.one_off] == ["more-trees", "lags"]
    assert {e.move_id for e in digest.warnings} == {"gnn", "drop-dates"}
    gnn = next(e for e in digest.warnings if e.move_id == "gnn")
    assert gnn.failures == 1 and "CUDA out of memory" in (gnn.cause or "")
    assert digest.move_stats["drop-dates"].worse == 2
    assert digest.move_stats["shuffle"].held == 0
    assert "augment" not in digest.move_stats  # another family and type: not similar
    text = digest.render()
    assert text.index("target-encoding") < text.index("more-trees") < text.index("drop-dates")
    assert "CUDA out of memory" in text


def test_the_digest_never_carries_a_test_number(store: KnowledgeStore) -> None:
    digest = relevant_knowledge(store, _fp("rel:a"))
    assert "lags" in digest.render()
    everything = digest.model_dump_json() + digest.render()
    assert "0.123456" not in everything and "val_test_gap" not in everything


@pytest.mark.parametrize("budget", [300, 600, 1200])
def test_the_digest_fits_its_budget_keeping_the_strongest_first(
    store: KnowledgeStore, budget: int
) -> None:
    store.add_lessons(
        _lesson(
            "r5",
            f"m{i}",
            _fp("rel:b"),
            f"move-{i}",
            verdict="better",
            gain=0.001 * i,
            hypothesis=f"Hypothesis number {i}, described at some length " * 3,
        )
        for i in range(1, 16)
    )
    digest = relevant_knowledge(store, _fp("rel:a"), budget_chars=budget)
    assert 0 < len(digest.render()) <= budget
    full = relevant_knowledge(store, _fp("rel:a"), budget_chars=100_000)
    assert len(full.render()) > 1200
    # what is cut goes from the bottom of each section: the held lesson stays
    assert [e.move_id for e in digest.lessons_held] == ["target-encoding"]
    assert digest.move_stats == full.move_stats  # the playbook's numbers are never cut


def test_a_run_does_not_learn_from_itself(store: KnowledgeStore) -> None:
    digest = relevant_knowledge(store, _fp("rel:a"), exclude_run="r3")
    assert "more-trees" not in digest.move_stats and "lags" not in digest.move_stats


def test_pages_of_the_family_are_matched_by_text(store: KnowledgeStore) -> None:
    store.add_pages(
        [
            KnowledgePage(
                id="rel/leak",
                family="rel",
                title="Leakage",
                body="Target leakage from future rows.",
            ),
            KnowledgePage(
                id="rel/trees",
                family="rel",
                title="Boosted trees",
                body="Use more trees with early stopping.",
            ),
            KnowledgePage(
                id="img/aug", family="img", title="Augment", body="Use more trees anyway."
            ),
        ]
    )
    digest = relevant_knowledge(store, _fp("rel:a"), parent_hypothesis="more trees")
    assert digest.pages[0].id == "rel/trees"
    assert "img/aug" not in [p.id for p in digest.pages]


def _context(digest) -> AgentContext:
    parent = NodeSummary(
        id="n0", parent_id=None, kind=NodeKind.SEED, status="evaluated", hypothesis="seed"
    )
    return AgentContext(
        task="rel:a",
        problem="",
        primary_metric="rmse",
        higher_is_better=False,
        parent=parent,
        parent_source={},
        tree=[parent],
        progress=BudgetProgress(),
        editable_files=["*.py"],
        knowledge=digest,
    )


def test_moves_are_ordered_by_past_verified_gains(store: KnowledgeStore) -> None:
    moves = [
        PlaybookMove(id=name, hypothesis=name, edits=[], rank=rank)
        for rank, name in enumerate(
            ["drop-dates", "shuffle", "brand-new", "more-trees", "target-encoding"]
        )
    ]
    ordered = order_by_knowledge(moves, _context(relevant_knowledge(store, _fp("rel:a"))))
    # held twice, then held once; no evidence keeps its rank; only ever worse goes last
    assert [m.id for m in ordered] == [
        "target-encoding",
        "more-trees",
        "shuffle",
        "brand-new",
        "drop-dates",
    ]
    assert order_by_knowledge(moves, _context(None)) == moves


def test_a_move_that_hurt_another_kind_of_task_keeps_its_rank(tmp_path: Path) -> None:
    # worse for accuracy on a classification task of the same family: no evidence for rmse
    classification = _fp("rel:c", metric="accuracy").model_copy(
        update={"task_type": "classification"}
    )
    store = KnowledgeStore(tmp_path / "kb.sqlite")
    store.add_lessons(
        [
            _lesson("r1", "n1", classification, "recency", verdict="worse", gain=-0.02),
            _lesson("r2", "n1", _fp("rel:b"), "drop-dates", verdict="worse", gain=-0.01),
        ]
    )
    moves = [
        PlaybookMove(id=name, hypothesis=name, edits=[], rank=rank)
        for rank, name in enumerate(["recency", "drop-dates", "more-trees"])
    ]
    digest = relevant_knowledge(store, _fp("rel:a"))
    assert digest.move_stats["recency"].worse == 1  # seen, and warned of in the digest
    ordered = order_by_knowledge(moves, _context(digest))
    assert [m.id for m in ordered] == ["recency", "more-trees", "drop-dates"]


# --------------------------------------------------------------------------- the switch


def test_knowledge_options_are_core_overrides() -> None:
    assert parse_overrides(["knowledge.enabled=false", "knowledge.record=false"]) == {
        "knowledge": {"enabled": False, "record": False}
    }
    config = RunConfig(**parse_overrides(["knowledge.enabled=false"]))
    assert (config.knowledge.enabled, config.knowledge.record) == (False, True)
    with pytest.raises(ConfigError, match=r"knowledge\.enabled=false"):
        parse_overrides(["knowledge=false"])


# --------------------------------------------------------------------------- real runs


@pytest.fixture
def cli(tmp_path: Path, rlab_cache: Path, monkeypatch: pytest.MonkeyPatch):
    """The real ``rlab`` command line, in this process, on the toy plugin."""
    monkeypatch.setenv("RLAB_PLUGIN_MODULES", "rlab_core.testing.toy.plugin")
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()

    def invoke(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.output

    return invoke


def _toy_run(cli, tmp_path: Path, *extra: str, script=None) -> Path:
    config = toy_config(
        tmp_path, script or [*SLOPE, CRASH], iterations=3, finalists=0, noise_seeds=0
    )
    before = set((tmp_path / "runs").glob("*")) if (tmp_path / "runs").exists() else set()
    cli("run", "--config", str(config), "--out", str(tmp_path / "runs"), *extra)
    (run,) = set((tmp_path / "runs").glob("*")) - before
    return run


def test_a_second_run_sees_the_first_runs_lessons_and_no_kg_removes_them(
    cli, tmp_path: Path, isolated_knowledge_base: Path
) -> None:
    first = _toy_run(cli, tmp_path)
    base = KnowledgeStore(isolated_knowledge_base)
    assert {lesson.move_id for lesson in base.lessons(run_id=first.name)} >= {"step0", "step1"}

    second = _toy_run(cli, tmp_path)
    shown = cli("show", str(second), "--context", "n0002")
    assert "## What worked before" in shown
    assert "`step0`" in shown and "Use the true slope 3" in shown  # the first run's gain
    assert "boom" in shown  # ... and its failure, as a warning
    kept = json.loads(cli("show", str(second), "--context", "n0002", "--json"))
    assert kept["knowledge"]["move_stats"]["step0"]["held"] == 1
    assert kept["parent"]["id"] == "n0001" and kept["tree_ids"] == ["n0000", "n0001"]
    # after two runs, the slope held on more than one run
    third = _toy_run(cli, tmp_path)
    held = read_context(third / "nodes" / "n0001")["knowledge"]["lessons_held"]
    assert [e["move_id"] for e in held] == ["step0"]

    for switch in (["--no-kg"], ["-o", "knowledge.enabled=false"]):
        off = _toy_run(cli, tmp_path, *switch)
        shown = cli("show", str(off), "--context", "n0001")
        assert "What worked before" not in shown and "step0" not in shown
        assert "switched off" in shown
        assert read_context(off / "nodes" / "n0001")["knowledge"] is None
        assert base.lessons(run_id=off.name)  # it still wrote its own lessons back

    silent = _toy_run(cli, tmp_path, "-o", "knowledge.record=false")
    assert base.lessons(run_id=silent.name) == []
    assert "What worked before" in cli("show", str(silent), "--context", "n0001")


def test_show_context_of_a_seed_or_unknown_node_is_one_clear_sentence(cli, tmp_path: Path) -> None:
    run = _toy_run(cli, tmp_path)
    runner = CliRunner()
    for node, problem in (("n0000", "no kept agent context"), ("n9999", "has no node 'n9999'")):
        result = runner.invoke(app, ["show", str(run), "--context", node])
        assert result.exit_code == 2 and problem in result.output
        assert "Traceback" not in result.output


class _PagesPlugin:
    """A plugin that ships curated pages for the toy family, read by ``load_pages``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @hookimpl
    def rlab_knowledge_pages(self):
        return load_pages(self.folder, "toy")


def test_plugin_pages_are_synced_at_run_start_and_reach_the_agent(
    toy_host, run_toy, tmp_path: Path, isolated_knowledge_base: Path
) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    _page(
        folder,
        "slope",
        "---\ntitle: Fit the slope first\ntags: [line]\n---\nThe slope of the line matters most.\n",
    )
    toy_host.register(_PagesPlugin(folder), name="toy-pages")
    outcome = run_toy(SLOPE)
    assert [p.id for p in KnowledgeStore(isolated_knowledge_base).pages()] == ["toy/slope"]
    kept = read_context(outcome.run.node_dir("n0001"))
    assert [p["id"] for p in kept["knowledge"]["pages"]] == ["toy/slope"]
    assert "Fit the slope first" in kept["knowledge_text"]


def test_a_broken_page_plugin_does_not_stop_the_run(toy_host, run_toy, tmp_path: Path) -> None:
    class Broken:
        @hookimpl
        def rlab_knowledge_pages(self):
            raise RuntimeError("pages folder missing")

    toy_host.register(Broken(), name="broken-pages")
    outcome = run_toy(SLOPE)
    assert outcome.best is not None and outcome.best.move_id == "step0"


def test_knowledge_digest_in_context_is_none_when_switched_off(run_toy) -> None:
    outcome = run_toy(SLOPE, knowledge={"enabled": False})
    assert read_context(outcome.run.node_dir("n0001"))["knowledge"] is None
