"""The competition metrics on aligned arrays, as Kaggle defines them.

Plain NumPy, no input checking beyond what the formula needs: :mod:`rlab_mle.metric_graders`
aligns a submission with its answers and rejects malformed ones first. Each metric is
tested against scikit-learn where scikit-learn has it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Kaggle clips probabilities to [EPS, 1 - EPS] before taking logs.
EPS = 1e-15


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    ranks[order] = np.arange(1, len(values) + 1)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return (sums / counts)[inverse]


def roc_auc(y_true: np.ndarray, y_score: np.ndarray) -> float:
    """Area under the ROC curve of one binary column (Mann-Whitney, ties count one half)."""
    y = np.asarray(y_true, dtype=float)
    positives = y == 1
    n_pos = int(positives.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("ROC AUC needs both classes in the answers")
    ranks = average_ranks(y_score)
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def mean_columnwise_roc_auc(y_true: np.ndarray, y_score: np.ndarray) -> float:
    """The mean of :func:`roc_auc` over columns (sklearn's ``average="macro"``)."""
    y_true, y_score = np.atleast_2d(y_true.T).T, np.atleast_2d(y_score.T).T
    return float(np.mean([roc_auc(y_true[:, j], y_score[:, j]) for j in range(y_true.shape[1])]))


def binary_log_loss(y_true: np.ndarray, p: np.ndarray) -> float:
    """Mean negative log-likelihood of 0/1 labels under probabilities ``p`` (clipped)."""
    y = np.asarray(y_true, dtype=float)
    p = np.clip(np.asarray(p, dtype=float), EPS, 1 - EPS)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def multiclass_log_loss(y_onehot: np.ndarray, p: np.ndarray) -> float:
    """Kaggle's multi-class log-loss: clip, rescale each row to sum 1, mean of -log p(true)."""
    p = np.clip(np.asarray(p, dtype=float), EPS, 1 - EPS)
    p = p / p.sum(axis=1, keepdims=True)
    return float(-np.mean(np.sum(np.asarray(y_onehot, dtype=float) * np.log(p), axis=1)))


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error over every value."""
    diff = np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)
    return float(np.sqrt(np.mean(diff**2)))


def rmsle(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared logarithmic error (values must be > -1)."""
    return rmse(np.log1p(np.asarray(y_true, dtype=float)), np.log1p(np.asarray(y_pred, float)))


def mean_columnwise_rmsle(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """The mean of :func:`rmsle` over columns."""
    y_true, y_pred = np.atleast_2d(y_true.T).T, np.atleast_2d(y_pred.T).T
    return float(np.mean([rmsle(y_true[:, j], y_pred[:, j]) for j in range(y_true.shape[1])]))


def mae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean absolute error over every value."""
    diff = np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)
    return float(np.mean(np.abs(diff)))


def accuracy(y_true: Sequence, y_pred: Sequence) -> float:
    """Share of rows whose prediction equals the answer."""
    return float(np.mean(np.asarray(y_true, dtype=object) == np.asarray(y_pred, dtype=object)))


def quadratic_weighted_kappa(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Cohen's kappa with quadratic weights over the sorted union of the ratings seen."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    labels = np.union1d(y_true, y_pred)
    k = len(labels)
    if k < 2:
        return 1.0 if np.array_equal(y_true, y_pred) else 0.0
    a = np.searchsorted(labels, y_true)
    b = np.searchsorted(labels, y_pred)
    observed = np.zeros((k, k))
    np.add.at(observed, (a, b), 1)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    index = np.arange(k)
    weights = (index[:, None] - index[None, :]) ** 2
    return float(1 - (weights * observed).sum() / (weights * expected).sum())


def average_precision_at_k(actual: Sequence[str], predicted: Sequence[str], k: int) -> float:
    """AP@k of one row: precision at each new hit among the first k, over min(|actual|, k)."""
    if not actual:
        return 0.0
    score, hits, seen = 0.0, 0, set()
    for i, label in enumerate(list(predicted)[:k]):
        if label in actual and label not in seen:
            hits += 1
            score += hits / (i + 1)
        seen.add(label)
    return score / min(len(actual), k)


def mean_average_precision_at_k(
    actual: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], k: int
) -> float:
    """MAP@k: the mean of :func:`average_precision_at_k` over rows."""
    return float(
        np.mean([average_precision_at_k(a, p, k) for a, p in zip(actual, predicted, strict=True)])
    )
