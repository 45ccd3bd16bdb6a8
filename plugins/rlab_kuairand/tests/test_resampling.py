"""The paired bootstrap of the primary over users, on the offline sample task."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rlab_kuairand.metrics import evaluate
from rlab_kuairand.task import KuaiRandTask

from rlab_core.resampling import draw_counts, paired_difference, replicate_scores, standard_error


def popularity(task: KuaiRandTask, split: str) -> np.ndarray:
    """The popularity seed's scores: each video's smoothed train long_view rate."""
    train = pd.read_csv(task.data_dir / "train.csv", usecols=["video_id", "long_view"])
    rows = pd.read_csv(task.data_dir / f"{split}.csv", usecols=["video_id"])
    overall = train["long_view"].mean()
    stats = train.groupby("video_id")["long_view"].agg(["sum", "count"])
    rate = (stats["sum"] + 20 * overall) / (stats["count"] + 20)
    return rows["video_id"].map(rate).fillna(overall).to_numpy(float)


@pytest.fixture(scope="module")
def predictions(task: KuaiRandTask, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("popularity")
    for split in ("val", "test"):
        np.save(folder / f"{split}_predictions.npy", popularity(task, split))
    return folder


def keys(task: KuaiRandTask, split: str = "val") -> dict[str, np.ndarray]:
    with np.load(task.private / f"{split}_keys.npz") as data:
        return {name: data[name] for name in data.files}


def at_ones(sampling) -> float:
    return float(sampling.statistic(np.ones((1, sampling.units), dtype=np.int64))[0])


@pytest.mark.parametrize("split", ["val", "test"])
@pytest.mark.parametrize("kind", ["popularity", "random", "ties"])
def test_every_user_drawn_once_gives_the_score(task, predictions, tmp_path, split, kind) -> None:
    folder = predictions
    if kind != "popularity":
        n = task.facts["counts"][split]
        rng = np.random.default_rng(1)
        scores = rng.random(n) if kind == "random" else np.round(rng.random(n), 1)
        np.save(tmp_path / f"{split}_predictions.npy", scores)
        folder = tmp_path
    sampling = task.resampling(folder, split)
    assert sampling.unit == "users" and sampling.strata is None
    assert sampling.units == len(np.unique(keys(task, split)["user_id"]))
    assert at_ones(sampling) == pytest.approx(task.score(folder, split).primary, rel=1e-9)


def reference_replicates(task, folder: Path, resamples: int, seed: int) -> np.ndarray:
    """The slow bootstrap: the organizers' evaluator on each resample's rows, a user drawn
    twice becoming two users."""
    key = keys(task)
    scores = np.load(folder / "val_predictions.npy")
    ids, unit = np.unique(key["user_id"], return_inverse=True)
    rows_of = [np.flatnonzero(unit == u) for u in range(len(ids))]
    out = []
    for counts in draw_counts(len(ids), resamples, seed):
        for row in counts:
            drawn = np.repeat(np.arange(len(ids)), row)  # each draw of a user is a new user
            rows = np.concatenate([rows_of[u] for u in drawn])
            users = np.repeat(np.arange(len(drawn)), [len(rows_of[u]) for u in drawn])
            out.append(evaluate(users, key["label"][rows], scores[rows])["primary"])
    return np.array(out)


def test_standard_error_agrees_with_a_slow_reference_bootstrap(task, predictions) -> None:
    sampling = task.resampling(predictions, "val")
    fast = replicate_scores(sampling, 1000, 21)
    slow = reference_replicates(task, predictions, 200, 22)
    ratio = standard_error(fast) / standard_error(slow)
    assert 1 / 1.5 < ratio < 1.5, ratio
    # on the same draws it is the evaluator itself
    same = reference_replicates(task, predictions, 64, 21)
    assert np.allclose(fast[:64], same, rtol=1e-12, atol=0)


def test_a_resample_without_a_mixed_user_has_gauc_one_half(task, predictions) -> None:
    key = keys(task)
    ids = np.unique(key["user_id"])
    positives = pd.Series(key["label"]).groupby(key["user_id"]).agg(["min", "max"])
    single = (positives["min"] == positives["max"]).reindex(ids).to_numpy()
    assert single.any() and not single.all()
    counts = single[None, :].astype(np.int64)  # only users with one class
    rows = np.isin(key["user_id"], ids[single])
    scores = np.load(predictions / "val_predictions.npy")
    metrics = evaluate(key["user_id"][rows], key["label"][rows], scores[rows])
    assert metrics["GAUC"] == 0.5
    statistic = task.resampling(predictions, "val").statistic(counts)[0]
    assert statistic == pytest.approx(metrics["primary"], rel=1e-12)


def test_a_prediction_against_itself_differs_by_exactly_zero(task, predictions, tmp_path) -> None:
    (tmp_path / "val_predictions.npy").write_bytes(
        (predictions / "val_predictions.npy").read_bytes()
    )
    a, b = task.resampling(predictions, "val"), task.resampling(tmp_path, "val")
    assert a.key == b.key
    ra, rb = replicate_scores(a, 500, 5), replicate_scores(b, 500, 5)
    point = task.score(predictions, "val").primary
    difference = paired_difference(point, point, ra, rb, higher_is_better=True, level=0.9)
    assert np.array_equal(ra, rb) and standard_error(ra) > 0
    assert (difference.delta, difference.low, difference.high) == (0.0, 0.0, 0.0)
