"""The prediction contract, scoring, submission, seeds and the playbook."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rlab_kuairand import plugin, submission
from rlab_kuairand.benchmark import KuaiRandBenchmark
from rlab_kuairand.options import KuaiRandOptions
from rlab_kuairand.task import KuaiRandTask

from rlab_core.api import (
    ContractError,
    LocalSandbox,
    apply_edits,
    copy_source,
    read_source,
    write_source,
)
from rlab_core.testing import check_benchmark, run_candidate

pytest_plugins = ["rlab_core.testing.fixtures"]


def _run(sandbox: LocalSandbox, task: KuaiRandTask, source: Path, tmp: Path):
    """Run a candidate folder like the loop does; return (execution, output folder)."""
    # one thread: on data this small LightGBM's threads only wait for each other
    return run_candidate(task, source, sandbox, tmp, threads=1, timeout_s=180, memory_mb=4096)


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


def _seed_module(task: KuaiRandTask, name: str):
    """Import a seed's main.py without leaving its scikit-learn block in this process."""
    import lightgbm  # noqa: F401  (first, normally: the seed then reuses it)

    blocked = "sklearn" not in sys.modules
    path = next(s.path for s in task.seed_candidates() if s.name == name) / "main.py"
    spec = importlib.util.spec_from_file_location(f"seed_{name}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        if blocked and sys.modules.get("sklearn", 0) is None:
            del sys.modules["sklearn"]
    return module


def test_history_features_use_only_earlier_days_and_decay_by_half_life(task: KuaiRandTask) -> None:
    seed = _seed_module(task, "history_lgbm")
    # one video: day 0 two rows (1 positive), day 2 one positive, day 3 one unlabelled test row
    rows = pd.DataFrame(
        {
            "video_id": [7, 7, 7, 7],
            "day": [0, 0, 2, 3],
            "labelled": [1.0, 1.0, 1.0, 0.0],
            "positive": [1.0, 0.0, 1.0, 0.0],
            "split": ["train", "train", "train", "test"],
        }
    )
    seed.lagged(rows, "all", ["video_id"], None)
    assert rows["all_n"].tolist() == [0, 0, 2, 3] and rows["all_shows"].tolist() == [0, 0, 2, 3]
    seed.decayed(rows, "decay", ["video_id"], 2.0)
    # day 2 sees day 0 at age 2 (weight 1/2); day 3 sees day 0 at age 3 and day 2 at age 1
    n3 = 2 * 0.5**1.5 + 0.5**0.5
    assert rows["decay_n"].tolist() == pytest.approx([0.0, 0.0, 1.0, n3])
    pos3 = 0.5**1.5 + 0.5**0.5
    overall = 2 / 3
    assert rows["decay_rate"].iloc[3] == pytest.approx((pos3 + 20 * overall) / (n3 + 20))


def test_every_move_applies_to_its_seed_and_the_composed_seeds_run(
    task: KuaiRandTask, sandbox: LocalSandbox, tmp_path: Path
) -> None:
    seeds = {s.name: s for s in task.seed_candidates()}
    originals = {name: read_source(seed.path) for name, seed in seeds.items()}
    moves = sorted(task.playbook(), key=lambda m: (m.rank, m.id))
    assert len(moves) >= 10 and len({m.id for m in moves}) == len(moves)
    assert {"recency-decay", "rank-xendcg", "truncation-5", "no-query-norm", "valid-refit"} <= {
        m.id for m in moves
    }
    composed, applied = dict(originals), {name: [] for name in seeds}
    for move in moves:
        targets = [
            name
            for name, files in originals.items()
            if all(files["main.py"].count(e.anchor) == 1 for e in move.edits)
        ]
        assert targets, f"move {move.id} applies to no seed"
        for name in targets:  # it still applies on top of the earlier moves: they compose
            composed[name] = apply_edits(composed[name], move.edits, task.editable_files)
            applied[name].append(move.id)
    assert len(applied["history_lgbm"]) >= 10 and len(applied["fm"]) >= 2, applied
    assert applied["popularity"] == ["valid-refit"]
    # one run per seed with every one of its moves applied: each move's code runs
    for name in seeds:
        folder = tmp_path / name
        copy_source(seeds[name].path, folder)
        write_source(folder, composed[name], ["main.py"])
        execution, out = _run(sandbox, task, folder, tmp_path / f"run-{name}")
        assert execution.ok, execution.log_tail
        assert task.validate_outputs(out, "test") == []
        assert 0.5 < task.score(out, "val").primary < 1.0, name


def test_a_forging_seed_fails_and_scores_nothing(
    benchmark: KuaiRandBenchmark, task: KuaiRandTask, tmp_path: Path
) -> None:
    """Links named like the predictions, to the private keys and labels, fail the seed."""
    from rlab_core.plugins import PluginHost
    from rlab_core.testing.forgery import check_forging_run

    keys = {split: task.private / f"{split}_keys.npz" for split in ("val", "test")}
    assert all(path.is_file() for path in keys.values())
    check_forging_run(
        PluginHost(),
        "kuairand:sample",
        {f"{split}_predictions.npy": path for split, path in keys.items()},
        tmp_path,
        benchmark_options=benchmark.config.model_dump(mode="json"),
    )
