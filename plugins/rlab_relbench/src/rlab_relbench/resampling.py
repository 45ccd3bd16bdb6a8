"""Weighted forms of relbench's metrics, for the paired bootstrap over entities.

A resample gives every label row a weight (how often its entity was drawn); each form here
does its per-row work once per node and then costs one pass over the rows per resample.
With every weight 1 each equals relbench's own metric (``relbench.metrics``): AUROC with
ties counted half, NMAE (MAE over the task's ``nmae_std``), MAP@k over the rows that have
at least one true destination.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rlab_core.api import WeightedAuroc, weighted_mean

#: A metric under row weights: ``(resamples, rows)`` weights in, ``(resamples,)`` values out.
WeightedMetric = Callable[[np.ndarray], np.ndarray]


def average_precision(pred: np.ndarray, truth: Any, num_dst: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's average precision at k, and whether the row counts (has a true destination).

    ``pred`` is ``(rows, k)`` destination ids, ``truth`` each row's list of true ids. The
    formula is relbench's ``map`` taken per row, before its mean: precision at each hit,
    summed, over the true count clipped to k.
    """
    pred = np.asarray(pred, dtype=np.int64)
    rows, k = pred.shape
    counts = np.fromiter((len(t) for t in truth), dtype=np.int64, count=rows)
    true_ids = np.concatenate(
        [np.asarray(t, dtype=np.int64) for t in truth] or [np.empty(0, dtype=np.int64)]
    )
    # one key per (row, destination) pair makes the per-row membership test one np.isin
    span = max(num_dst, int(pred.max(initial=0)) + 1, int(true_ids.max(initial=0)) + 1)
    true_keys = np.repeat(np.arange(rows, dtype=np.int64), counts) * span + true_ids
    hit = np.isin(np.arange(rows, dtype=np.int64)[:, None] * span + pred, true_keys)
    precision = np.cumsum(hit, axis=1) / (np.arange(k) + 1)
    relevant = counts > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        per_row = (precision * hit).sum(axis=1) / np.clip(counts, None, k)
    return np.where(relevant, per_row, 0.0), relevant


def weighted_metric(
    metric: str, pred: np.ndarray, labels: Any, spec: dict, nmae_std: float | None = None
) -> WeightedMetric | None:
    """The weighted form of relbench's ``metric`` on these predictions, or None if it has none.

    ``labels`` is the split's label frame (the private ``{split}_labels.parquet``).
    """
    if metric == "roc_auc":
        return WeightedAuroc(labels[spec["target_col"]].to_numpy(), pred)
    if metric == "nmae" and nmae_std:
        truth = labels[spec["target_col"]].to_numpy(dtype=float)
        errors = np.abs(truth - np.asarray(pred, dtype=float)) / nmae_std
        return lambda weights: weighted_mean(errors, weights)
    if metric == "map":
        per_row, relevant = average_precision(
            pred, labels[spec["dst_entity_col"]], int(spec["num_dst"])
        )
        # relbench drops rows with no true destination before its mean: weigh them 0
        return lambda weights: weighted_mean(per_row, weights * relevant)
    return None
