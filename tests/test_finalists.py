"""Seed replicates for the finalists, the test interval in `rlab final`, and the fallback of a
benchmark that offers no resampling."""

from __future__ import annotations

import json

import pytest
from conftest import edit, extra

from rlab_core.api import BenchmarkInfo, PreparedTask, hookimpl
from rlab_core.config import RunConfig
from rlab_core.final import finalize
from rlab_core.journal import read_events, replay
from rlab_core.run_folder import open_run
from rlab_core.runner import resume_run, start_run
from rlab_core.testing.toy.benchmark import ToyBenchmark, ToyOptions, ToyTask

SLOPE_3 = {
    "hypothesis": "Slope 3 fits the trend.",
    "edits": [edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")],
}
#: On slope 3: perfect with RLAB_SEED 0 only, the lucky node a single seed would choose.
LUCKY = {
    "hypothesis": "Slope 3 and intercept 1, when the seed is kind.",
    "edits": [extra("INTERCEPT = 1.0 if os.environ['RLAB_SEED'] == '0' else 3.5")],
}
#: On slope 3: fails under any seed but 0.
FRAGILE = {
    "hypothesis": "Slope 3 and intercept 1, crashing under other seeds.",
    "edits": [
        extra("INTERCEPT = 1.0\nif os.environ['RLAB_SEED'] != '0':\n    raise SystemExit(3)")
    ],
}


def _events(run, kind: str) -> list[dict]:
    return [e for e in read_events(run.journal_path)[0] if e["type"] == kind]


def test_the_mean_over_seeds_chooses_and_the_lucky_node_loses(run_toy):
    outcome = run_toy([SLOPE_3, LUCKY], finalists=3, finalist_seeds=2)
    state = replay(outcome.run.journal_path)
    tree = state.tree
    seed, steady, lucky = (tree.get(i) for i in ("n0000", "n0001", "n0002"))
    # the lucky node is the best by validation, and accepted: a real gain with seed 0
    assert lucky.accepted and tree.best().id == lucky.id
    assert lucky.score.primary < steady.score.primary  # RMSE: lower is better
    replicates = _events(outcome.run, "replicate_scored")
    assert sorted((e["node_id"], e["seed"]) for e in replicates) == [
        (n, s) for n in ("n0000", "n0001", "n0002") for s in (1, 2)
    ]
    chosen = _events(outcome.run, "finalists_chosen")[-1]
    rows = {row["node"]: row for row in chosen["finalists"]}
    assert set(rows["n0002"]["scores"]) == {"0", "1", "2"}
    assert rows["n0002"]["spread"] > 0.5 and rows["n0001"]["spread"] == 0  # the seed reached it
    assert rows["n0001"]["mean"] < rows["n0002"]["mean"]
    assert chosen["node_id"] == "n0001" and outcome.best.id == "n0001"
    assert chosen["rule"] == (
        "chosen by mean validation over 3 seeds among the 3 best nodes accepted at 90%"
    )
    assert tree.selected().id == "n0001" and tree.chosen_rule == chosen["rule"]
    assert _events(outcome.run, "run_stopped")[-1]["best"] == "n0001"
    manifest = json.loads((outcome.run.best_dir / "manifest.json").read_text())
    assert manifest["node"] == "n0001" and manifest["selection_rule"] == chosen["rule"]
    # a replicate keeps its log, not its predictions
    home = outcome.run.root / "replicates" / "n0002-seed1"
    assert (home / "log.txt").is_file() and not (home / "outputs").exists()
    assert seed.id not in {chosen["node_id"]}


def test_a_node_that_fails_under_another_seed_ranks_last(run_toy):
    outcome = run_toy([SLOPE_3, FRAGILE], finalists=2, finalist_seeds=1)
    chosen = _events(outcome.run, "finalists_chosen")[-1]
    rows = {row["node"]: row for row in chosen["finalists"]}
    assert rows["n0002"]["failures"]["1"].startswith("[run] exited with code 3")
    assert chosen["node_id"] == "n0001"


def test_resume_runs_only_the_missing_replicates_and_a_new_node_reopens_the_choice(
    run_toy, toy_host
):
    outcome = run_toy([SLOPE_3, LUCKY], finalists=2, finalist_seeds=1, iterations=1)
    assert len(_events(outcome.run, "replicate_scored")) == 2  # seed and slope 3, one seed each
    resumed = resume_run(toy_host, open_run(outcome.run.root), iterations=2)
    replicates = _events(outcome.run, "replicate_scored")
    # the lucky node is new: it and slope 3 are the finalists; slope 3's replicate is kept
    assert [(e["node_id"], e["seed"]) for e in replicates] == [
        ("n0001", 1),
        ("n0000", 1),
        ("n0002", 1),
    ]
    choices = _events(outcome.run, "finalists_chosen")
    assert [c["node_id"] for c in choices] == ["n0001", "n0001"]
    assert resumed.best.id == "n0001"


def test_without_finalists_the_best_is_handed_on_and_the_rule_says_so(run_toy):
    outcome = run_toy([SLOPE_3, LUCKY], finalists=0)
    assert not _events(outcome.run, "replicate_scored")
    assert outcome.best.id == "n0002"
    manifest = json.loads((outcome.run.best_dir / "manifest.json").read_text())
    assert manifest["selection_rule"] is None


def test_a_time_budget_keeps_time_back_for_the_finalists(run_toy):
    slow = [
        {"hypothesis": f"Sleep {i}.", "edits": [extra(f"import time\ntime.sleep(0.4)\n_{i} = 1")]}
        for i in range(20)
    ]
    outcome = run_toy(slow, finalists=1, finalist_seeds=2, time_budget_s=3.0, iterations=50)
    assert "kept for the finalists" in outcome.stop_reason
    assert len(_events(outcome.run, "replicate_scored")) == 2


def test_final_reports_the_test_interval_the_gap_and_the_rule(run_toy, toy_host):
    outcome = run_toy([SLOPE_3, LUCKY], finalists=2, finalist_seeds=1)
    report = finalize(toy_host, open_run(outcome.run.root))
    assert report["node"] == "n0001"
    assert report["selection_rule"] == (
        "chosen by mean validation over 2 seeds among the 2 best nodes accepted at 90%"
    )
    assert report["val_resample_unit"] == "points" and report["val_standard_error"] > 0
    low, high = report["test_interval"]
    assert low < report["test_primary"] < high and report["test_interval_level"] == 0.9
    assert 0 < report["test_standard_error"] < high - low
    assert report["val_test_gap"] == pytest.approx(report["test_primary"] - report["val_primary"])
    assert [row["node"] for row in report["finalists"]] == ["n0002", "n0001"]


class _PlainTask(ToyTask):
    """The toy task as a third-party benchmark that offers no resampling."""

    name = "plain:line"
    resampling = PreparedTask.resampling


class _PlainBenchmark(ToyBenchmark):
    def list_tasks(self) -> list:
        return []

    def prepare(self, task, cache_root, *, rebuild_cache=False):
        toy = super().prepare(task, cache_root, rebuild_cache=rebuild_cache)
        return _PlainTask(toy.root, self.config)


class _PlainPlugin:
    @hookimpl
    def rlab_register_benchmarks(self):
        return [BenchmarkInfo("plain", "No resampling.", lambda: _PlainBenchmark, ToyOptions)]


def test_a_benchmark_without_resampling_accepts_any_gain_and_says_so_once(
    toy_host, tmp_path, rlab_cache
):
    toy_host.register(_PlainPlugin(), name="plain")
    wiggle = {
        "hypothesis": "A tiny wiggle.",
        "edits": [extra("INTERCEPT = 0.0001")],
    }
    config = RunConfig(
        task="plain:line",
        agent="scripted",
        agent_options={"script": [SLOPE_3, wiggle]},
        out=tmp_path / "runs",
        iterations=2,
        finalists=0,
    )
    outcome = start_run(toy_host, config)
    info = json.loads(outcome.run.run_json.read_text())
    assert info["acceptance"]["rule"] == "any" and info["acceptance"]["requested"] == "significant"
    note = info["acceptance"]["note"]
    assert note.startswith("plain:line offers no resampling of its metric")
    started = _events(outcome.run, "run_started")
    assert [e["acceptance_note"] for e in started] == [note]
    tree = replay(outcome.run.journal_path).tree
    nudged = tree.get("n0002")
    assert nudged.gain.verdict == "unmeasured" and nudged.accepted  # any gain counts
    assert nudged.score.standard_error is None and outcome.best.id == "n0002"
