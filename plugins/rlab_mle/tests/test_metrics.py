"""Metrics against scikit-learn (where it has them) and hand-computed cases; grader checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rlab_mle import metrics
from rlab_mle.metric_graders import InvalidSubmission, UnknownGrader, grader_for
from sklearn import metrics as skm

from rlab_core.api import ConfigError

RNG = np.random.default_rng(7)
N = 400


def test_roc_auc_matches_sklearn_with_ties() -> None:
    y = RNG.integers(0, 2, N)
    score = np.round(RNG.random(N) + 0.3 * y, 1)  # rounding makes many ties
    assert metrics.roc_auc(y, score) == pytest.approx(skm.roc_auc_score(y, score), abs=1e-12)
    # by hand: positives {0.8, 0.5}, negatives {0.5, 0.2}: pairs win, tie, win, win -> 3.5 / 4
    assert metrics.roc_auc(np.array([1, 1, 0, 0]), np.array([0.8, 0.5, 0.5, 0.2])) == 0.875


def test_mean_columnwise_roc_auc_matches_sklearn_macro() -> None:
    y = RNG.integers(0, 2, (N, 4))
    score = RNG.random((N, 4)) + 0.5 * y
    expected = skm.roc_auc_score(y, score, average="macro")
    assert metrics.mean_columnwise_roc_auc(y, score) == pytest.approx(expected, abs=1e-12)


def test_log_losses_match_sklearn() -> None:
    y = RNG.integers(0, 2, N)
    p = np.clip(RNG.random(N) * 0.8 + 0.1 * y + 0.05, 0.01, 0.99)
    assert metrics.binary_log_loss(y, p) == pytest.approx(skm.log_loss(y, p), abs=1e-12)
    labels = RNG.integers(0, 5, N)
    proba = RNG.random((N, 5)) + 2 * np.eye(5)[labels]
    proba /= proba.sum(axis=1, keepdims=True)
    onehot = np.eye(5)[labels]
    expected = skm.log_loss(labels, proba, labels=range(5))
    assert metrics.multiclass_log_loss(onehot, proba) == pytest.approx(expected, abs=1e-12)
    # Kaggle rescales rows that do not sum to one, and clips zeros
    assert metrics.multiclass_log_loss(onehot, proba * 0.5) == pytest.approx(expected, abs=1e-12)
    assert np.isfinite(metrics.multiclass_log_loss(onehot, np.eye(5)[(labels + 1) % 5]))


def test_regression_metrics_match_sklearn() -> None:
    y = RNG.gamma(2.0, 30.0, N)
    p = y * RNG.lognormal(0, 0.3, N)
    assert metrics.rmse(y, p) == pytest.approx(np.sqrt(skm.mean_squared_error(y, p)), rel=1e-12)
    assert metrics.rmsle(y, p) == pytest.approx(
        np.sqrt(skm.mean_squared_log_error(y, p)), rel=1e-12
    )
    assert metrics.mae(y, p) == pytest.approx(skm.mean_absolute_error(y, p), rel=1e-12)
    ys, ps = np.column_stack([y, y / 2]), np.column_stack([p, p / 3])
    expected = np.mean([np.sqrt(skm.mean_squared_log_error(ys[:, j], ps[:, j])) for j in (0, 1)])
    assert metrics.mean_columnwise_rmsle(ys, ps) == pytest.approx(expected, rel=1e-12)


def test_accuracy_and_kappa_match_sklearn() -> None:
    y = RNG.integers(0, 5, N)
    p = np.where(RNG.random(N) < 0.6, y, RNG.integers(0, 5, N))
    assert metrics.accuracy(y, p) == pytest.approx(skm.accuracy_score(y, p))
    expected = skm.cohen_kappa_score(y, p, weights="quadratic")
    assert metrics.quadratic_weighted_kappa(y, p) == pytest.approx(expected, abs=1e-12)
    sparse = np.array([0, 2, 4, 4, 2])  # ratings that skip values: indices, as sklearn does
    guess = np.array([0, 4, 4, 2, 2])
    expected = skm.cohen_kappa_score(sparse, guess, weights="quadratic")
    assert metrics.quadratic_weighted_kappa(sparse, guess) == pytest.approx(expected, abs=1e-12)


def test_map_at_k_by_hand() -> None:
    assert metrics.average_precision_at_k(["a"], ["b", "a", "c"], 5) == 0.5
    assert metrics.average_precision_at_k(["a"], ["b", "c", "d", "e", "f", "a"], 5) == 0.0
    # two relevant: hits at ranks 1 and 3 -> (1/1 + 2/3) / 2
    assert metrics.average_precision_at_k(["a", "c"], ["a", "b", "c"], 3) == pytest.approx(5 / 6)
    assert metrics.average_precision_at_k(["a"], ["a", "a"], 5) == 1.0  # repeats count once
    assert metrics.mean_average_precision_at_k([["a"], ["b"]], [["a"], ["c", "b"]], 5) == 0.75


@pytest.mark.parametrize(
    ("name", "metric", "higher"),
    [
        ("accuracy", "accuracy", True),
        ("auc-roc", "auc", True),
        ("Column-wise ROC AUC", "columnwise-auc", True),
        ("mean-column-wise-roc-auc", "columnwise-auc", True),
        ("log-loss", "log-loss", False),
        ("multi-class-log-loss", "multi-class-log-loss", False),
        ("root_mean_squared_error", "rmse", False),
        ("root-mean-squared-error", "rmse", False),
        ("mean-column-wise-rmsle", "columnwise-rmsle", False),
        ("mean-absolute-error", "mae", False),
        ("quadratic-weighted-kappa", "qwk", True),
        ("MAP@12", "map", True),
        ("map-at-5", "map", True),
    ],
)
def test_grader_names(name: str, metric: str, higher: bool) -> None:
    grader = grader_for(name)
    assert (grader.metric, grader.higher_is_better) == (metric, higher)


def test_unknown_grader_is_one_clear_error() -> None:
    with pytest.raises(UnknownGrader, match=r"no grader named 'levenshtein-distance'.*mlebench"):
        grader_for("levenshtein-distance")
    assert issubclass(UnknownGrader, ConfigError)


def frame(ids, **columns) -> pd.DataFrame:
    return pd.DataFrame({"id": ids, **columns})


ANSWERS = frame([1, 2, 3, 4], target=[1, 0, 1, 0])


@pytest.mark.parametrize(
    ("submission", "message"),
    [
        (
            pd.DataFrame({"id": [1, 2, 3, 4], "p": [0.1] * 4}),
            r"columns \['id', 'p'\].*missing \['target'\].*unexpected \['p'\]",
        ),
        (frame([1, 2, 3], target=[0.1, 0.2, 0.3]), r"3 rows, expected 4"),
        (
            frame([1, 2, 3, 3], target=[0.1] * 4),
            r"repeats 1 id values \(e\.g\. 3\).*lacks 1 expected id",
        ),
        (frame([1, 2, 3, 9], target=[0.1] * 4), r"1 id values that are not expected \(e\.g\. 9\)"),
        (
            frame([1, 2, 3, 4], target=[0.1, None, 0.3, 0.4]),
            r"column 'target' has 1 missing \(NaN\) values",
        ),
        (
            frame([1, 2, 3, 4], target=[0.1, 1.2, -0.1, 0.4]),
            r"outside \[0, 1\] \(min -0\.1, max 1\.2\)",
        ),
        (frame([1, 2, 3, 4], target=["a", 0.2, 0.3, 0.4]), r"1 non-numeric values \(e\.g\. 'a'\)"),
    ],
)
def test_bad_submissions_get_one_sentence_each(submission: pd.DataFrame, message: str) -> None:
    with pytest.raises(InvalidSubmission, match=message):
        grader_for("auc-roc").grade(submission, ANSWERS, "id", ["target"])


def test_rmsle_refuses_negative_predictions() -> None:
    with pytest.raises(InvalidSubmission, match="at least 0"):
        grader_for("mean-column-wise-rmsle").grade(
            frame([1, 2], y=[-1.0, 2.0]), frame([1, 2], y=[1.0, 2.0]), "id", ["y"]
        )


def test_graders_align_by_id_and_read_labels_in_any_form() -> None:
    answers = frame([1, 2, 3, 4], target=[True, False, True, False])
    shuffled = frame([4, 2, 1, 3], target=[0.2, 0.1, 0.9, 0.8])
    assert grader_for("auc-roc").grade(shuffled, answers, "id", ["target"]) == 1.0
    labels = frame([1, 2, 3], target=[1, "2", 3.0])
    guesses = frame([3, 2, 1], target=["3", 2.0, "1"])
    assert grader_for("accuracy").grade(guesses, labels, "id", ["target"]) == 1.0
    # multi-class answers given as one label column are one-hot encoded
    classes = ["a", "b"]
    answers = pd.DataFrame({"id": [1, 2], "species": ["a", "b"]})
    submission = pd.DataFrame({"id": [1, 2], "a": [0.9, 0.2], "b": [0.1, 0.8]})
    expected = -np.mean(np.log([0.9, 0.8]))
    value = grader_for("multi-class-log-loss").grade(submission, answers, "id", classes)
    assert value == pytest.approx(expected)
