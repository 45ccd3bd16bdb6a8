"""Binary classification metrics in plain NumPy (AUROC with tie handling, log-loss, accuracy)."""

from __future__ import annotations

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank (like scipy.stats.rankdata)."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    boundaries = np.flatnonzero(np.diff(sorted_values)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [len(values)]))
    ranks_sorted = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    ranks = np.empty(len(values), dtype=float)
    ranks[order] = ranks_sorted
    return ranks


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U), ties counted as one half."""
    labels = np.asarray(labels, dtype=bool)
    positives = int(labels.sum())
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        raise ValueError("AUROC needs both classes among the labels")
    ranks = average_ranks(np.asarray(scores, dtype=float))
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def log_loss(labels: np.ndarray, probabilities: np.ndarray, eps: float = 1e-15) -> float:
    p = np.clip(np.asarray(probabilities, dtype=float), eps, 1 - eps)
    y = np.asarray(labels, dtype=float)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def accuracy(labels: np.ndarray, probabilities: np.ndarray) -> float:
    return float(np.mean((np.asarray(probabilities) >= 0.5) == np.asarray(labels, dtype=bool)))
