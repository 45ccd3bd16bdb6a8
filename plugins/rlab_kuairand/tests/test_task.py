"""The prediction contract, scoring, submission, seeds, playbook and a full research run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import rlab_agents.plugin as agents_plugin
from rlab_kuairand import plugin, submission
from rlab_kuairand.benchmark import KuaiRandBenchmark
from rlab_kuairand.options import KuaiRandOptions
from rlab_kuairand.playbook import MOVES
from rlab_kuairand.task import KuaiRandTask

from rlab_core.builtin.local_sandbox import LocalSandbox, LocalSandboxConfig
from rlab_core.config import RunConfig
from rlab_core.edits import apply_edits, copy_source, read_source, write_source
from rlab_core.errors import ContractError
from rlab_core.journal import replay
from rlab_core.plugins import PluginHost
from rlab_core.runner import start_run
from rlab_core.testing import check_benchmark, run_candidate

pytest_plugins = ["rlab_core.testing.fixtures"]
SMALL = {"sample_users": 250, "sample_videos": 700}
TINY = {"sample_users": 80, "sample_videos": 300}  # the full run: six candidates


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    return LocalSandbox(LocalSandboxConfig())


def _run(sandbox: LocalSandbox, task: KuaiRandTask, source: Path, tmp: Path):
    """Run a candidate folder like the loop does; return (execution, output folder)."""
    return run_candidate(task, source, sandbox, tmp, threads=2, timeout_s=180, memory_mb=4096)


def test_plugin_registers_lazily_below_the_relbench_default(plugin_host, register_plugin) -> None:
    register_plugin(plugin, name="kuairand")
    registered = plugin_host.get("benchmarks", "kuairand")
    assert registered.info.default_task == "kuairand:sample"
    assert registered.info.default_priority < 100
    assert registered.info.config is KuaiRandOptions
    assert registered.info.load() is KuaiRandBenchmark
    with pytest.raises(ValueError):
        KuaiRandOptions(sample_user=10)  # type: ignore[call-arg]


def test_conformance_kit_runs_the_first_seed(benchmark, cache_root, sandbox) -> None:
    prepared = check_benchmark(benchmark, "sample", cache_root, sandbox=sandbox)
    assert prepared.primary_metric == "primary"
    assert [s.name for s in prepared.seed_candidates()] == ["history_lgbm", "fm", "popularity"]


def test_oracle_and_constant_scores(task: KuaiRandTask, tmp_path: Path) -> None:
    labels = np.load(task.private / "val_keys.npz")["label"].astype(float)
    np.save(tmp_path / "val_predictions.npy", labels)
    oracle = task.score(tmp_path, "val")
    assert oracle.metrics["GAUC"] == pytest.approx(1.0)
    assert set(oracle.metrics) == {"GAUC", "nDCG@5", "primary", "users", "rows"}
    assert oracle.metrics["rows"] == task.facts["counts"]["val"]
    assert 0.7 < oracle.metrics["nDCG@5"] < 1.0  # users without a positive count 0
    np.save(tmp_path / "val_predictions.npy", np.zeros(len(labels)))
    assert task.score(tmp_path, "val").metrics["GAUC"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda n: np.zeros(n - 1), "expected ("),
        (lambda n: np.r_[np.nan, np.zeros(n - 1)], "NaN or infinite"),
        (lambda n: np.array(["a"] * n), "expected a float dtype"),
        (lambda n: np.zeros((n, 2)), "one per row"),
    ],
)
def test_contract_errors_one_message_each(
    task: KuaiRandTask, tmp_path: Path, make, fragment
) -> None:
    np.save(tmp_path / "val_predictions.npy", make(task.facts["counts"]["val"]))
    problems = task.validate_outputs(tmp_path, "val")
    assert len(problems) == 1 and fragment in problems[0], problems
    with pytest.raises(ContractError, match=r"val_predictions\.npy"):
        task.score(tmp_path, "val")
    assert task.validate_outputs(tmp_path, "test")[0].startswith("test_predictions.npy is missing")


def test_submission_is_written_in_test_row_order_and_checked(
    task: KuaiRandTask, tmp_path: Path
) -> None:
    private, best = tmp_path / "private", tmp_path / "best"
    private.mkdir()
    best.mkdir()
    assert task.write_submission(tmp_path, private, best) is None
    n = task.facts["counts"]["test"]
    np.save(private / "test_predictions.npy", np.linspace(0, 1, n))
    path = task.write_submission(tmp_path, private, best)
    frame = pd.read_csv(path)
    public = pd.read_csv(task.data_dir / "test.csv")
    assert list(frame.columns) == ["row_id", "user_id", "video_id", "score"]
    assert frame["row_id"].tolist() == public["row_id"].tolist()
    assert frame["user_id"].tolist() == public["user_id"].tolist()
    assert frame["video_id"].tolist() == public["video_id"].tolist()
    keys = np.load(task.private / "test_keys.npz")
    bad = frame.copy()
    bad.loc[3, "video_id"] += 1
    bad.loc[5, "score"] = np.inf
    bad.to_csv(tmp_path / "bad.csv", index=False)
    assert submission.check(tmp_path / "bad.csv", keys["user_id"], keys["video_id"]) == [
        "user_id / video_id do not match the test rows of the same row_id",
        "score has missing, non-numeric or infinite values",
    ]


def test_every_move_applies_to_a_seed_and_history_moves_compose_and_run(
    task: KuaiRandTask, sandbox: LocalSandbox, tmp_path: Path
) -> None:
    seeds = {s.name: read_source(s.path) for s in task.seed_candidates()}
    moves = task.playbook()
    assert len(moves) >= 10 and len({m.id for m in moves}) == len(moves)
    history = seeds["history_lgbm"]
    for move in sorted(moves, key=lambda m: (m.rank, m.id)):
        targets = [
            name
            for name, files in seeds.items()
            if all(files["main.py"].count(e.anchor) == 1 for e in move.edits)
        ]
        assert targets, f"move {move.id} applies to no seed"
        if "history_lgbm" in targets:
            try:
                history = apply_edits(history, move.edits, task.editable_files)
            except Exception:  # a parameter move superseded by an earlier one on this line
                continue
    composed = tmp_path / "composed"
    seed_dir = next(s.path for s in task.seed_candidates() if s.name == "history_lgbm")
    copy_source(seed_dir, composed)
    write_source(composed, history, ["main.py"])
    execution, out = _run(sandbox, task, composed, tmp_path / "run")
    assert execution.ok, execution.log_tail
    assert task.validate_outputs(out, "test") == []
    assert 0.5 < task.score(out, "val").primary < 1.0


@pytest.mark.slow
def test_full_run_with_the_playbook_agent(cache_root: Path, tmp_path: Path) -> None:
    host = PluginHost(use_entry_points=False, strict=True)
    host.register(plugin, name="kuairand")
    host.register(agents_plugin, name="agents")
    config = RunConfig(
        task="kuairand:sample",
        agent="playbook",
        iterations=3,
        out=tmp_path / "runs",
        benchmark_options=TINY,
        threads=2,
    )
    outcome = start_run(host, config)
    assert outcome.best is not None and outcome.best.score is not None
    seeds = {n.id: n.score.primary for n in outcome.seeds if n.score}
    assert len(seeds) == 3
    assert outcome.best.score.primary >= max(seeds.values())
    state = replay(outcome.run.journal_path)
    seed_ids = {n.id for n in outcome.seeds}
    moves = [n.move_id for n in state.tree.nodes.values() if n.id not in seed_ids]
    assert 1 <= len(moves) <= 3 and set(moves) <= {m.id for m in MOVES}, moves
    # the winner's test predictions are private: never in the node's outputs
    assert list(outcome.run.private_dir.rglob("test_predictions.npy"))
    assert not list((outcome.run.root / "nodes").rglob("test_predictions.npy"))
