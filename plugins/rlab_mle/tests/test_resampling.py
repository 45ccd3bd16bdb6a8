"""The paired bootstrap of a competition's score: units, strata and the statistic.

Predictions come from a small LightGBM fitted here on the real built-in data (the seed
itself takes longer than this file may), written in the competition's formats.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
from rlab_mle import competition_grading, resampling
from rlab_mle.metric_graders import align, grader_for
from sklearn.metrics import roc_auc_score

from rlab_core.resampling import draw_counts, paired_difference, replicate_scores, standard_error

BUILTINS = (
    "wdbc-breast-cancer",
    "uci-handwritten-digits",
    "diabetes-progression",
    "nyc-flights-air-time",
)


def fit_predict(task, folder: Path) -> Path:
    """A small LightGBM's val_predictions.csv and submission.csv for ``task`` in ``folder``."""
    facts, data = task.facts, task.data_dir
    train, val = pd.read_csv(data / "train.csv"), pd.read_csv(data / "val.csv")
    test = pd.read_csv(task.competition.public_dir / "test.csv")
    id_column, targets, label = facts["id_column"], facts["target_columns"], facts["label_column"]
    features = [c for c in val.columns if c != id_column and pd.api.types.is_numeric_dtype(val[c])]
    params = {"n_estimators": 30, "verbose": -1, "n_jobs": 1, "random_state": 0}
    folder.mkdir(parents=True, exist_ok=True)
    for rows, name in ((val, "val_predictions.csv"), (test, "submission.csv")):
        frame = pd.DataFrame({id_column: rows[id_column]})
        if facts["prediction"] == "value":
            model = lgb.LGBMRegressor(**params).fit(train[features], train[targets[0]])
            frame[targets[0]] = np.clip(model.predict(rows[features]), 0, None)
        else:
            truth = train[label or targets[0]].astype(str)
            model = lgb.LGBMClassifier(**params).fit(train[features], truth)
            proba = model.predict_proba(rows[features])
            classes = list(model.classes_)
            if label:
                for target in targets:
                    frame[target] = proba[:, classes.index(target)]
            else:
                frame[targets[0]] = proba[:, classes.index("1")]
        frame.to_csv(folder / name, index=False)
    return folder


@pytest.fixture(scope="module")
def predicted(prepare, tmp_path_factory) -> dict[str, tuple[object, Path]]:
    """Each built-in task with a folder of real predictions for val and test."""
    root = tmp_path_factory.mktemp("predictions")
    return {cid: (prepare(cid), fit_predict(prepare(cid), root / cid)) for cid in BUILTINS}


def at_ones(sampling) -> float:
    return float(sampling.statistic(np.ones((1, sampling.units), dtype=np.int64))[0])


@pytest.mark.parametrize("split", ["val", "test"])
@pytest.mark.parametrize("cid", BUILTINS)
def test_every_unit_drawn_once_gives_the_score(predicted, cid, split) -> None:
    task, folder = predicted[cid]
    sampling = task.resampling(folder, split)
    assert sampling is not None and sampling.unit == "rows"
    assert sampling.units == task.facts["rows"][split]
    assert at_ones(sampling) == pytest.approx(task.score(folder, split).primary, rel=1e-9)
    classification = task.facts["prediction"] == "probability"
    assert (sampling.strata is not None) == classification  # by class; regression: none


@pytest.mark.parametrize(
    ("cid", "change"),
    [
        # hard 0/1 probabilities: the grader's clipping to [1e-15, 1 - 1e-15] decides
        ("uci-handwritten-digits", lambda p: (p == p.max(axis=1, keepdims=True)).astype(float)),
        ("uci-handwritten-digits", lambda p: p * 3.0 - 0.5),  # rows not summing to 1
        ("wdbc-breast-cancer", lambda p: np.round(p, 1)),  # many tied scores
        ("diabetes-progression", lambda p: np.where(p > 150, 0.0, p)),  # log1p(0)
    ],
)
def test_clipping_ties_and_zeros_keep_the_identity(predicted, tmp_path, cid, change) -> None:
    task, folder = predicted[cid]
    frame = pd.read_csv(folder / "val_predictions.csv")
    targets = task.facts["target_columns"]
    frame[targets] = np.clip(change(frame[targets].to_numpy(dtype=float)), 0, None)
    if task.facts["prediction"] == "probability":
        frame[targets] = frame[targets].clip(upper=1.0)
    frame.to_csv(tmp_path / "val_predictions.csv", index=False)
    score = task.score(tmp_path, "val").primary
    assert at_ones(task.resampling(tmp_path, "val")) == pytest.approx(score, rel=1e-9)


def reference_replicates(task, folder: Path, strata, resamples: int, seed: int) -> np.ndarray:
    """The slow bootstrap: the competition's grader, checks and all, on each resample's rows."""
    sample = task._expected("val")
    id_column, targets = competition_grading.header(sample)
    sub, ans = align(
        pd.read_csv(folder / "val_predictions.csv"),
        pd.read_csv(task.private / "val_answers.csv"),
        id_column,
    )
    out = []
    for counts in draw_counts(len(ans), resamples, seed, strata):
        for row in counts:
            rows = np.repeat(np.arange(len(ans)), row)
            fresh = np.arange(len(rows))  # distinct ids, the same in both frames
            picked = [f.iloc[rows].assign(**{id_column: fresh}) for f in (sub, ans)]
            grader = grader_for(task.competition.grader_name)
            out.append(round(grader.grade(*picked, id_column, targets), 5))
    return np.array(out)


@pytest.mark.parametrize("cid", ["uci-handwritten-digits", "nyc-flights-air-time"])
def test_standard_error_agrees_with_a_slow_reference_bootstrap(predicted, cid) -> None:
    task, folder = predicted[cid]
    sampling = task.resampling(folder, "val")
    fast = replicate_scores(sampling, 1000, 11)
    slow = reference_replicates(task, folder, sampling.strata, 200, 12)
    ratio = standard_error(fast) / standard_error(slow)
    assert 1 / 1.5 < ratio < 1.5, ratio
    # on the same draws the weighted form is the grader itself
    same = reference_replicates(task, folder, sampling.strata, 64, 11)
    assert np.allclose(fast[:64], same, rtol=0, atol=1e-12)


@pytest.mark.parametrize("cid", ["uci-handwritten-digits", "wdbc-breast-cancer"])
def test_stratified_draws_keep_each_class_count(predicted, cid) -> None:
    task, folder = predicted[cid]
    sampling = task.resampling(folder, "val")
    answers = pd.read_csv(task.private / "val_answers.csv")
    targets = task.facts["target_columns"]
    truth = answers[targets].to_numpy().argmax(axis=1) if len(targets) > 1 else answers[targets[0]]
    table = pd.crosstab(sampling.strata, np.asarray(truth))
    assert ((table > 0).sum(axis=1) == 1).all() and ((table > 0).sum(axis=0) == 1).all()
    sizes = np.bincount(sampling.strata)  # one stratum per class, as many rows as it has
    for counts in draw_counts(sampling.units, 100, 3, sampling.strata):
        per_class = np.stack(
            [counts[:, sampling.strata == s].sum(axis=1) for s in range(len(sizes))]
        )
        assert (sizes == per_class.T).all()
        assert counts.std(axis=0).max() > 0  # and rows within a class do vary


def test_a_prediction_against_itself_differs_by_exactly_zero(predicted, tmp_path) -> None:
    task, folder = predicted["uci-handwritten-digits"]
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "val_predictions.csv").write_bytes((folder / "val_predictions.csv").read_bytes())
    a, b = task.resampling(folder, "val"), task.resampling(copy, "val")
    assert a.key == b.key
    ra, rb = replicate_scores(a, 300, 5), replicate_scores(b, 300, 5)
    point = task.score(folder, "val").primary
    difference = paired_difference(
        point, point, ra, rb, higher_is_better=task.higher_is_better, level=0.9
    )
    assert np.array_equal(ra, rb) and standard_error(ra) > 0
    assert (difference.delta, difference.low, difference.high) == (0.0, 0.0, 0.0)
    assert difference.verdict == "within noise"


def test_the_grader_on_resampled_rows_is_the_fallback(predicted) -> None:
    """A metric without a weighted form is graded row selection by row selection."""
    task, folder = predicted["wdbc-breast-cancer"]
    fast = task.resampling(folder, "val")
    sub = pd.read_csv(folder / "val_predictions.csv")
    ans = pd.read_csv(task.private / "val_answers.csv")
    id_column, targets = competition_grading.header(task._expected("val"))
    aligned = align(sub, ans, id_column)
    grade_rows = resampling.row_grader(
        task.competition, grader_for("auc-roc"), *aligned, id_column, targets
    )
    slow = resampling.rounded(resampling.indexed_statistic(np.arange(fast.units), grade_rows))
    for counts in draw_counts(fast.units, 100, 4, fast.strata):
        assert np.array_equal(slow(counts), fast.statistic(counts))


def mlebench_style_auc(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    """A grader written as mle-bench writes them: same ids, sorted by id, then the metric."""
    if len(submission) != len(answers) or "id" not in submission.columns:
        raise ValueError("submission and answers must have the same length and an id column")
    submission, answers = submission.sort_values("id"), answers.sort_values("id")
    if (submission["id"].to_numpy() != answers["id"].to_numpy()).any():
        raise ValueError("submission and answers ids differ")
    return float(roc_auc_score(answers["malignant"], submission["malignant"]))


@pytest.mark.parametrize("split", ["val", "test"])
def test_an_mlebench_grade_fn_is_resampled_through_itself(predicted, split) -> None:
    """A competition graded by its own ``grade_fn``, under a metric name rlab-mle lacks."""
    task, folder = predicted["wdbc-breast-cancer"]
    competition = dataclasses.replace(
        task.competition, grade_fn=mlebench_style_auc, grader_name="custom AUC"
    )
    if split == "val":
        sub = pd.read_csv(folder / "val_predictions.csv")
        ans = pd.read_csv(task.private / "val_answers.csv")
    else:
        sub, ans = pd.read_csv(folder / "submission.csv"), pd.read_csv(competition.answers)
    sample = task._expected(split)
    sampling = resampling.competition_resampling(competition, sub, ans, sample)
    score = competition_grading.grade(competition, sub, ans, sample)
    assert sampling.strata is None  # an unknown metric: plain rows
    assert at_ones(sampling) == pytest.approx(score, rel=1e-9)
    reference = task.resampling(folder, split)  # the same metric through rlab-mle's grader
    counts = next(draw_counts(sampling.units, 40, 8))
    assert np.allclose(sampling.statistic(counts), reference.statistic(counts), atol=1e-12)


def test_a_grouped_split_draws_whole_groups(prepare, tmp_path) -> None:
    task = prepare("flights-late-by-plane")
    group = task.facts["split"]["group_column"]
    assert group == "tailnum"
    folder = fit_predict(task, tmp_path / "out")
    for split in ("val", "test"):
        sampling = task.resampling(folder, split)
        assert sampling.unit == "tailnum groups" and sampling.strata is None
        assert at_ones(sampling) == pytest.approx(task.score(folder, split).primary, rel=1e-9)
    sampling = task.resampling(folder, "val")
    val = pd.read_csv(task.data_dir / "val.csv")
    assert sampling.units == val[group].nunique()
    # drawing the first plane twice and the last none: its flights count twice, the other's not
    planes = np.sort(val[group].astype(str).unique())
    counts = np.ones((1, sampling.units), dtype=np.int64)
    counts[0, 0], counts[0, -1] = 2, 0
    answers = pd.read_csv(task.private / "val_answers.csv")
    sub = pd.read_csv(folder / "val_predictions.csv")
    plane_of = val.set_index(val["id"])[group].astype(str)
    rows = answers["id"].map(plane_of)
    picked = [answers[rows == planes[0]], answers[rows != planes[-1]]]
    answers = pd.concat(picked, ignore_index=True)
    sub = sub.set_index("id").loc[answers["id"]].reset_index()
    fresh = np.arange(len(answers))
    expected = grader_for("log-loss").grade(
        sub.assign(id=fresh), answers.assign(id=fresh), "id", ["late"]
    )
    assert sampling.statistic(counts)[0] == pytest.approx(round(expected, 5), abs=1e-12)
